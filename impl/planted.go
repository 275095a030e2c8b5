package impl

import "github.com/csconform/csconform/model/history"

// reserveIP gives a NIC an address: DB.ReserveIP's atomic claim of the first free one, or, with the
// planted race, a claim of the address a separate read found free.
func (s *Server) reserveIP(t *Thread, nic *NicVO) string {
	if !s.Defects[PlantedIPFromStaleRead] {
		return s.DB.ReserveIP(t.Name, nic.ID)
	}
	for _, h := range s.DB.IPPool(nic.NetworkID) {
		if h.VMID == 0 {
			return s.DB.claimIP(t.Name, nic.ID, h.Address)
		}
	}
	return ""
}

// claimIP gives addr to a NIC whatever holds it now: the planted race's second statement.
func (db *DB) claimIP(actor string, nicID int64, addr string) string {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	nic := db.nics[nicID]
	for _, ip := range db.ips[nic.NetworkID] {
		if ip.Address != addr {
			continue
		}
		from := "free"
		if old, ok := db.nics[ip.NicID]; ok && ip.NicID != 0 {
			from = VMObject(old.VMID) // its NIC row keeps the address too: two NICs, one address
		}
		ip.NicID = nicID
		nic.IP = addr
		db.touch(tIPs, nic.NetworkID)
		db.touch(tNic, nicID)
		db.emit(history.Event{Actor: actor, Kind: history.IP, Object: "ip:" + addr, From: from, To: VMObject(nic.VMID)})
		return addr
	}
	return ""
}
