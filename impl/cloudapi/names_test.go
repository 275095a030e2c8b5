package cloudapi

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/csconform/csconform/impl"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A deploy keeps the name the caller gave: cloudstack-go's GetVirtualMachineByName finds the VM by
// it (before, every VM was named i-2-<id>-VM and the lookup failed); the instance name stays.
func TestDeployKeepsTheGivenName(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.network(t, "net1")
	deploy := func(name, display string) (string, error) {
		p := f.deployParams(t, n.Id)
		p.SetStartvm(false)
		if name != "" {
			p.SetName(name)
		}
		if display != "" {
			p.SetDisplayname(display)
		}
		d, err := f.cs.VirtualMachine.DeployVirtualMachine(p)
		if err != nil {
			return "", err
		}
		f.wait(t, d.JobID)
		return d.Id, nil
	}
	web, err := deploy("web-1", "the web server")
	require.NoError(t, err)
	db, err := deploy("db-1", "")
	require.NoError(t, err)
	plain, err := deploy("", "")
	require.NoError(t, err)

	v, count, err := f.cs.VirtualMachine.GetVirtualMachineByName("web-1")
	require.NoError(t, err)
	assert.Equal(t, 1, count)
	assert.Equal(t, web, v.Id)
	assert.Equal(t, "web-1", v.Name)
	assert.Equal(t, "the web server", v.Displayname)
	assert.Regexp(t, `^i-2-\d+-VM$`, v.Instancename)

	v, _, err = f.cs.VirtualMachine.GetVirtualMachineByName("DB-1") // CloudStack's name filter ignores case
	require.NoError(t, err)
	assert.Equal(t, db, v.Id)
	assert.Equal(t, "db-1", v.Displayname, "the display name defaults to the name")

	v, _, err = f.cs.VirtualMachine.GetVirtualMachineByID(plain)
	require.NoError(t, err)
	assert.Equal(t, v.Instancename, v.Name, "no name given: the instance name")
	_, _, err = f.cs.VirtualMachine.GetVirtualMachineByName(v.Instancename)
	require.NoError(t, err)

	p := f.cs.VirtualMachine.NewListVirtualMachinesParams()
	p.SetKeyword("web server")
	l, err := f.cs.VirtualMachine.ListVirtualMachines(p)
	require.NoError(t, err)
	require.Equal(t, 1, l.Count, "keyword matches the display name")
	assert.Equal(t, web, l.VirtualMachines[0].Id)

	// what CloudStack refuses: a name that is no host name, a name taken on the network
	for _, c := range []struct{ name, mention string }{
		{"1web", "Invalid name"},
		{"web_1", "Invalid name"},
		{"-web", "Invalid name"},
		{strings.Repeat("a", 64), "Invalid name"},
		{"WEB-1", "already exists in the network domain"},
	} {
		_, err := deploy(c.name, "")
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.mention, c.name)
		assert.Contains(t, err.Error(), "431", c.name)
	}
}

// The names a deploy was given survive a restart on the same state file, as every column of
// vm_instance does (they were once the face's memory, and a restart showed every VM by its instance
// name: issue 47).
func TestNamesSurviveARestart(t *testing.T) {
	cfg, err := impl.NewConfig(map[string]string{"vm.job.check.interval": "100"})
	require.NoError(t, err)
	state := filepath.Join(t.TempDir(), "db.json")
	env := testEnv{}
	serve := func() (*fixture, func()) {
		log := &logBuf{}
		db, err := impl.OpenDB(env, log, state)
		require.NoError(t, err)
		srv := impl.NewServer("ms1", env, db, cfg, impl.Switches{}, noAgents{never: make(chan struct{})})
		srv.Start()
		ts := httptest.NewServer(New(srv, Options{Logf: log.Logf}, testCreds))
		u := ts.URL + "/client/api"
		return &fixture{srv: srv, url: u, log: log, cs: cs.NewClient(u, testCreds.APIKey, testCreds.SecretKey, false)},
			func() { ts.Close(); db.Detach() }
	}
	f, stop := serve()
	n := f.network(t, "net1")
	p := f.deployParams(t, n.Id)
	p.SetStartvm(false)
	p.SetName("web-1")
	p.SetDisplayname("the web server")
	d, err := f.cs.VirtualMachine.DeployVirtualMachine(p)
	require.NoError(t, err)
	f.wait(t, d.JobID)
	stop()

	f, stop = serve()
	defer stop()
	v, count, err := f.cs.VirtualMachine.GetVirtualMachineByName("web-1")
	require.NoError(t, err)
	assert.Equal(t, 1, count)
	assert.Equal(t, d.Id, v.Id)
	assert.Equal(t, "the web server", v.Displayname)
}
