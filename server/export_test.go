package server

// Exported for the package's external tests.
var MemoryLimitFor = memoryLimitFor
