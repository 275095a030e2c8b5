package impl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeartbeatTakesAtMost50QueueItems pins the heartbeat's cap. AsyncJobManagerImpl.getHeartbeatTask
// (apache/cloudstack@04b49bc3, framework/jobs/src/main/java/org/apache/cloudstack/framework/jobs/impl/
// AsyncJobManagerImpl.java) calls _queueMgr.dequeueFromAny(getMsid(), MAX_ONETIME_SCHEDULE_SIZE),
// 50, whose SyncQueueItemDaoImpl.getNextQueueItems (apache/cloudstack@1502b605) selects the items
// not in process, one per queue, ORDER BY i.id LIMIT 50; a queue whose active item runs still takes a
// place and is then skipped. So of 60 queues with waiting work, the 50 with the oldest items are
// taken this tick and the rest the next.
func TestHeartbeatTakesAtMost50QueueItems(t *testing.T) {
	item := func(id int64, running bool) *workItem { return &workItem{job: &JobVO{ID: id}, running: running} }
	type tc struct {
		name   string
		queues map[int64][]*workItem
		want   []int64 // VM ids picked
	}
	cases := []tc{
		{"fewer than the cap: all", map[int64][]*workItem{3: {item(30, false)}, 1: {item(31, false)}}, []int64{1, 3}},
		{"running head alone: not a candidate", map[int64][]*workItem{1: {item(5, true)}, 2: {item(6, false)}}, []int64{2}},
		{"running head with a waiter: a candidate, by the waiter's item", map[int64][]*workItem{1: {item(5, true), item(9, false)}}, []int64{1}},
	}
	many := map[int64][]*workItem{}
	var want []int64
	for vmID := int64(1); vmID <= 60; vmID++ {
		// VM ids in the reverse order of their items: the oldest items are those of VMs 11..60
		many[vmID] = []*workItem{item(1000-vmID, false)}
		if vmID > 10 {
			want = append(want, vmID)
		}
	}
	cases = append(cases, tc{"60 queues: the 50 oldest items", many, want})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &AsyncJobManager{queues: c.queues}
			picked := m.nextQueueItems(MaxOnetimeScheduleSize)
			var got []int64
			for id := int64(0); id <= 100; id++ {
				if picked[id] {
					got = append(got, id)
				}
			}
			require.Equal(t, c.want, got)
		})
	}
}
