package logcheck

import (
	"strconv"
	"strings"
)

// Object renderings differ by version (log-formats.md, "Object renderings"); these helpers find an
// object's key in any of them: vm:<id>, network:<id>, host:<id>.

// digits returns the leading run of digits of s.
func digits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// jsonField reads "key":value or key: "value" (both renderings) from s, "" if absent; values may be
// quoted or bare, and "null".
func jsonField(s, key string) string {
	for _, pat := range []string{`"` + key + `":`, `"` + key + `": `, key + `: `, key + `=`, key + `:`} {
		i := -1
		for off := 0; off < len(s); {
			j := strings.Index(s[off:], pat)
			if j < 0 {
				break
			}
			// a key must not be the tail of a longer key ("vmId" vs "id")
			if k := off + j; pat[0] == '"' || k == 0 || !isWordByte(s[k-1]) {
				i = k
				break
			}
			off += j + len(pat)
		}
		if i < 0 {
			continue
		}
		v := strings.TrimLeft(s[i+len(pat):], " ")
		if strings.HasPrefix(v, `"`) {
			if j := strings.IndexByte(v[1:], '"'); j >= 0 {
				return v[1 : 1+j]
			}
			return ""
		}
		j := strings.IndexAny(v, ",} ")
		if j < 0 {
			j = len(v)
		}
		if v[:j] == "null" {
			return ""
		}
		return v[:j]
	}
	return ""
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// vmIDFromName reads the id out of an instance name: i-2-6-VM, r-93-VM, v-30806-VM, s-1-VM.
func vmIDFromName(n string) string {
	if !strings.HasSuffix(n, "-VM") || len(n) < 6 || n[1] != '-' {
		return ""
	}
	switch n[0] {
	case 'i', 'r', 'v', 's':
	default:
		return ""
	}
	parts := strings.Split(n[2:len(n)-3], "-")
	id := parts[len(parts)-1]
	if id == "" || digits(id) != id {
		return ""
	}
	return id
}

// findInstanceName finds the first token that is an instance name.
func findInstanceName(s string) string {
	for i := 0; i+5 < len(s); i++ {
		c := s[i]
		if (c == 'i' || c == 'r' || c == 'v' || c == 's') && s[i+1] == '-' && (i == 0 || !isWordByte(s[i-1]) && s[i-1] != '-') {
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '-' || s[j] == 'V' || s[j] == 'M') {
				j++
			}
			if n := s[i:j]; vmIDFromName(n) != "" {
				return n
			}
		}
	}
	return ""
}

// vmRef finds the VM a message is about; key "vm:<id>" ("vm:<name>" when only an odd name is known).
func vmRef(s string) (key, name string) {
	if i := strings.Index(s, "VM["); i >= 0 { // VM[User|i-2-6-VM]
		r := s[i+3:]
		if j := strings.IndexByte(r, ']'); j > 0 {
			r = r[:j]
			if k := strings.IndexByte(r, '|'); k >= 0 {
				r = r[k+1:]
			}
			if id := vmIDFromName(r); id != "" {
				return "vm:" + id, r
			}
			return "vm:" + r, r
		}
	}
	if i := strings.Index(s, "VM instance {"); i >= 0 { // both JSON renderings
		body := s[i+len("VM instance "):]
		if r, ok := strings.CutPrefix(body, `{"id":`); ok { // 4.19+: the id first, the fast path
			if id := digits(r); id != "" {
				if j := strings.Index(r, `"instanceName":"`); j >= 0 {
					name = r[j+len(`"instanceName":"`):]
					if k := strings.IndexByte(name, '"'); k >= 0 {
						name = name[:k]
					}
				}
				return "vm:" + id, name
			}
		}
		if j := strings.IndexByte(body, '}'); j > 0 {
			body = body[:j+1]
		}
		name = jsonField(body, "instanceName")
		if name == "" {
			name = jsonField(body, "name")
		}
		if id := jsonField(body, "id"); id != "" && digits(id) == id {
			return "vm:" + id, name
		}
		if id := vmIDFromName(name); id != "" {
			return "vm:" + id, name
		}
	}
	lower := s
	for _, pat := range []string{"vm id: ", "VM id: ", "vm id=", "VM id=", "vm id ", "VM id ", "vm: ", "VM id:", "Vm id: "} {
		if i := strings.Index(lower, pat); i >= 0 {
			if id := digits(s[i+len(pat):]); id != "" {
				return "vm:" + id, findInstanceName(s)
			}
			if n := findInstanceName(s[i+len(pat):]); n != "" && strings.HasPrefix(s[i+len(pat):], n) {
				return "vm:" + vmIDFromName(n), n
			}
		}
	}
	if n := findInstanceName(s); n != "" {
		return "vm:" + vmIDFromName(n), n
	}
	if i := strings.Index(s, "VM "); i >= 0 {
		if id := digits(s[i+3:]); id != "" {
			return "vm:" + id, ""
		}
	}
	return "", ""
}

// hostRef finds a host: Host {"id":1,...}, host: 1, Host 13, host id: 1, via: 14(name), host h1.
func hostRef(s string) string {
	if i := strings.Index(s, "Host {"); i >= 0 {
		body := s[i+5:]
		if j := strings.IndexByte(body, '}'); j > 0 {
			body = body[:j+1]
		}
		if id := jsonField(body, "id"); id != "" {
			return "host:" + id
		}
		if n := jsonField(body, "name"); n != "" {
			return "host:" + n
		}
	}
	for _, pat := range []string{"host is still up: ", "host id: ", "host: ", "Host: ", "host id=", "via: ", "Host ", "host "} {
		if i := strings.Index(s, pat); i >= 0 {
			v := s[i+len(pat):]
			j := strings.IndexAny(v, " ,.()[]")
			if j < 0 {
				j = len(v)
			}
			if v[:j] != "" && v[:j] != "null" && v[:j] != "is" && v[:j] != "with" {
				return "host:" + v[:j]
			}
		}
	}
	return ""
}

// networkRef finds a network: Ntwk[207|Guest|8], network id=224, Network {"id": 295, …}, network 1.
func networkRef(s string) string {
	if i := strings.Index(s, "Ntwk["); i >= 0 {
		if id := digits(s[i+5:]); id != "" {
			return "network:" + id
		}
	}
	if i := strings.Index(s, "Network {"); i >= 0 {
		if id := jsonField(s[i:], "id"); id != "" {
			return "network:" + id
		}
	}
	for _, pat := range []string{"network id=", "Network id=", "network id ", "Network id ", "network id: ",
		"network: ", "Network: ", "network [", "Network [", "network ", "Network "} {
		for off := 0; off < len(s); {
			i := strings.Index(s[off:], pat)
			if i < 0 {
				break
			}
			if id := digits(s[off+i+len(pat):]); id != "" {
				return "network:" + id
			}
			off += i + len(pat)
		}
	}
	return ""
}

// jobRef reads job-N from a message or context ("" if none); work is the VM work job of job-N/job-M.
func jobRef(s string) (job, work string) {
	i := strings.Index(s, "job-")
	if i < 0 {
		return "", ""
	}
	job = digits(s[i+4:])
	r := s[i+4+len(job):]
	if strings.HasPrefix(r, "/job-") {
		work = digits(r[5:])
	}
	return job, work
}

func atoi(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
