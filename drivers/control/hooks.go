package control

import (
	"fmt"
	"net/http"
	"time"
)

// AgentHooks is the fault hook endpoint of csconform agent --faults, every request only with token
// (RequireToken):
//
//	POST /delayNextOutOfBand?d=1500ms  delay(d): the next out-of-band report reaches the server that late
//	POST /routerBoot?d=36s             routerBoot(d): routers started from now on say ready that long
//	                                   after reaching userspace (0: back to the default); only with a
//	                                   routerBoot (an agent on real libvirt domains: for simulated ones
//	                                   the hypervisor serves it)
func AgentHooks(token string, delay, routerBoot func(time.Duration)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /delayNextOutOfBand", func(w http.ResponseWriter, r *http.Request) {
		v, err := time.ParseDuration(r.FormValue("d"))
		if err != nil {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		delay(v)
		WriteJSON(w, http.StatusOK, map[string]string{"delay": v.String()})
	})
	if routerBoot != nil {
		mux.HandleFunc("POST /routerBoot", func(w http.ResponseWriter, r *http.Request) {
			v, err := time.ParseDuration(r.FormValue("d"))
			if err == nil && v < 0 {
				err = fmt.Errorf("negative router boot %s", v)
			}
			if err != nil {
				WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			routerBoot(v)
			WriteJSON(w, http.StatusOK, map[string]string{"routerBoot": v.String()})
		})
	}
	return RequireToken(token, mux)
}

// TruthOpen serves GET /domains (a hypervisor's truth, read-only) to anyone and everything else of
// h, the fault hooks first, only with the control token (RequireToken): on TCP any local process can
// reach the port.
func TruthOpen(token string, h http.Handler) http.Handler {
	locked := RequireToken(token, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/domains" {
			h.ServeHTTP(w, r)
			return
		}
		locked.ServeHTTP(w, r)
	})
}
