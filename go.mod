module github.com/paddock/paddock

go 1.26.8
