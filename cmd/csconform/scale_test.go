package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/harness"
)

func TestScaleCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"scenarios", "scale", "--hosts", "2", "--vms-per-host", "3", "--duration", "1h"}, &out, &errOut), errOut.String())
	sc, err := harness.ParseScenario(out.Bytes(), "generated")
	require.NoError(t, err, "the generated file reads back")
	require.Len(t, sc.Steps, 6)

	for _, args := range [][]string{
		{"scenarios", "scale", "--hosts", "0"},
		{"scenarios", "scale", "extra"},
		{"bench", "--scale", "10,x"},
		{"bench", "--scale", "10", "--vms-per-network", "99"},
		{"bench", "extra"},
	} {
		out.Reset()
		errOut.Reset()
		require.Equal(t, exitBadInput, run(args, &out, &errOut), "%v", args)
		require.NotEmpty(t, errOut.String(), "%v", args)
	}
}
