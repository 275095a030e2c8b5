module github.com/csconform/csconform

go 1.26
