package libvirt

import (
	"encoding/binary"
	"fmt"
	"os"
)

// writeQcow2 creates an empty qcow2 (version 3) image of size bytes at f, laid out as
// `qemu-img create -f qcow2` lays it out: header in cluster 0, refcount table in 1, refcount block
// in 2, L1 table in 3, 64 KiB clusters, 16-bit refcounts. It is written in Go so an agent in a
// container FROM scratch, which has no qemu-img, creates the same volume files as the host does.
func writeQcow2(f string, size int64) error {
	const (
		clusterBits = 16
		cluster     = 1 << clusterBits
		l2Entries   = cluster / 8
	)
	if size <= 0 {
		return fmt.Errorf("qcow2 %s: size %d", f, size)
	}
	l1Size := (size + cluster*l2Entries - 1) / (cluster * l2Entries)
	if l1Size > cluster/8 {
		return fmt.Errorf("qcow2 %s: %d bytes is more than one L1 cluster addresses", f, size)
	}
	var hdr [112]byte
	be := binary.BigEndian
	copy(hdr[0:], "QFI\xfb")
	be.PutUint32(hdr[4:], 3)             // version
	be.PutUint32(hdr[20:], clusterBits)  // cluster_bits
	be.PutUint64(hdr[24:], uint64(size)) // size
	be.PutUint32(hdr[36:], uint32(l1Size))
	be.PutUint64(hdr[40:], 3*cluster) // l1_table_offset
	be.PutUint64(hdr[48:], 1*cluster) // refcount_table_offset
	be.PutUint32(hdr[56:], 1)         // refcount_table_clusters
	be.PutUint32(hdr[96:], 4)         // refcount_order: 16-bit refcounts
	be.PutUint32(hdr[100:], uint32(len(hdr)))
	// hdr[104] compression type 0 (zlib), then padding; the header extensions end at once (zeros).
	img := make([]byte, 3*cluster+8*l1Size)
	copy(img, hdr[:])
	be.PutUint64(img[1*cluster:], 2*cluster) // refcount table -> refcount block
	for i := range 4 {                       // clusters 0-3 are in use
		be.PutUint16(img[2*cluster+2*i:], 1)
	}
	fd, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := fd.Write(img); err != nil {
		fd.Close()
		os.Remove(f)
		return err
	}
	return fd.Close()
}
