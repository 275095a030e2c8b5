package harness

import (
	"strconv"
	"sync/atomic"
	"time"
)

var runSeq atomic.Int64

// NewRunID names a run: letters and digits only, unique in this process and across processes.
func NewRunID() string {
	return "r" + strconv.FormatInt(time.Now().UnixMilli()%(36*36*36*36*36*36), 36) + strconv.FormatInt(runSeq.Add(1), 36)
}
