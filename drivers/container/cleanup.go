package container

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Cleanup removes every container, network, volume and image labelled with run ("" = every run's):
// containers first (forced, with their anonymous volumes), then networks, volumes and images. It
// returns what it removed, as "container NAME", "network NAME", ….
func Cleanup(ctx context.Context, run string) ([]string, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	defer cli.Close()
	label := LabelRun
	if run != "" {
		label += "=" + run
	}
	f := client.Filters{}.Add("label", label)
	var removed []string
	var errs []error
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	for _, ct := range cs.Items {
		name := ct.ID[:12]
		if len(ct.Names) > 0 {
			name = strings.TrimPrefix(ct.Names[0], "/")
		}
		if ct.State == "paused" {
			cli.ContainerUnpause(ctx, ct.ID, client.ContainerUnpauseOptions{})
		}
		if _, err := cli.ContainerRemove(ctx, ct.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", name, err))
		} else {
			removed = append(removed, "container "+name)
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, n := range ns.Items {
			if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("network %s: %w", n.Name, err))
			} else {
				removed = append(removed, "network "+n.Name)
			}
		}
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, v := range vs.Items {
			if _, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil {
				errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
			} else {
				removed = append(removed, "volume "+v.Name)
			}
		}
	}
	// Images: the run's tagged image, and the untagged intermediate ones of its build (they carry the
	// label too, as the build's LABEL applies to every stage of a FROM scratch build).
	is, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, im := range is.Items {
			name := im.ID
			if len(im.RepoTags) > 0 {
				name = im.RepoTags[0]
			}
			if _, err := cli.ImageRemove(ctx, im.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !strings.Contains(err.Error(), "No such image") {
				errs = append(errs, fmt.Errorf("image %s: %w", name, err))
			} else if err == nil {
				removed = append(removed, "image "+name)
			}
		}
	}
	return removed, errors.Join(errs...)
}
