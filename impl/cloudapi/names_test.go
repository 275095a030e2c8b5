package cloudapi

import (
	"strings"
	"testing"

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
