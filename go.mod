module github.com/csconform/csconform

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/apache/cloudstack-go/v2 v2.17.0
	github.com/digitalocean/go-libvirt v0.0.0-20261013170128-efbbdf578ac8
	gopkg.in/yaml.v3 v3.0.1
	pgregory.net/rapid v1.3.0
)

require (
	go.uber.org/mock v0.5.0 // indirect
	golang.org/x/crypto v0.48.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
