// Module lint builds the linter that hack/lint.sh runs: staticcheck
// (honnef.co/go/tools), from source through the Go module proxy. Nothing here
// is imported by the product. The committed go.sum is the pin (the build uses
// -mod=readonly); hack/lint.sh rebuilds the binary when go.mod, go.sum or the
// Go version change. To move the pin:
//   cd hack/lint && go get -tool honnef.co/go/tools/cmd/staticcheck@VERSION && go mod tidy
module github.com/crdsafety/kapp/hack/lint

go 1.26.8

tool honnef.co/go/tools/cmd/staticcheck

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)
