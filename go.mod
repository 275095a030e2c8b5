module github.com/csconform/csconform

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
