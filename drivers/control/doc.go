// Package control is the protocol of csconform server's control endpoint, in one place for both
// sides: the handler the server serves (Handler), the client the drivers call it with (Call, Do),
// and the token every request carries (Token, RequireToken). The fault hooks of csconform
// hypervisor and csconform agent take the same token and answer the same way: the agent's are here
// (AgentHooks), and the hypervisor's truth is served open beside its locked hooks (TruthOpen).
//
// The endpoint is a few CloudStack-named commands as JSON over HTTP, parameters in the query string
// or a form body, every request with the server's control token, e.g.
//
//	curl -H "Authorization: Bearer $(cat TOKENFILE)" 'http://127.0.0.1:8096/deployVirtualMachine?networkids=1&hostid=h1'
//
// It is a driving handle for tests and people, not CloudStack's API (that is impl/cloudapi). It
// drives everything the server does, so it listens on loopback by default (CheckAddr) and answers
// only with the token.
package control
