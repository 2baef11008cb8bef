// Package configs loads the typed configuration of paddock's components with viper and
// holds the sample files users copy (server.yaml).
//
// Every component's Config struct is one section of a YAML file, named by its top-level
// key; inside a section each exported field is a snake_case key (ClientAddr is client_addr,
// ServerID is server_id). Values come from, in increasing precedence:
//
//	defaults       the component's DefaultConfig()
//	config file    YAML (--config FILE); for the server section, --zoo-cfg FILE instead
//	environment    PADDOCK_<SECTION>_<KEY>, e.g. PADDOCK_SERVER_CLIENT_ADDR=:2181
//	flags          a flag named like a key with dashes, e.g. --client-addr for client_addr
//
// Durations are Go durations ("2s", "500ms"); lists are YAML lists, or comma-separated
// strings in the environment and in flags. A key no section knows, in the file or as a
// PADDOCK_<SECTION>_ variable of a known section, stops loading with an error that names
// it, as does a value of the wrong type (key, value and what is allowed). Loading then
// runs the component's Validate. A password (a key ending in _password, or a zoo.cfg
// key naming one) is never shown in an error or the log, nor is what the file a
// zoo.cfg passwordPath key names holds.
//
// An Apache ZooKeeper zoo.cfg (--zoo-cfg) is read as ZooKeeper reads it (zoocfg.go);
// zookeys.go lists the keys it maps, the ones it accepts with a warning (named, with the
// reason) and how each value is parsed. Any other key, and a bad value, stop loading.
// Two or more server.N lines (in the zoo.cfg or its dynamicConfigFile) are the members of
// a replicated ensemble, server.ensemble, and dataDir/myid must say which one this is;
// one line or none configure a standalone server, as in ZooKeeper.
package configs
