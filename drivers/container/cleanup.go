package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	f := runFilter(run)
	var removed []string
	var errs []error
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	for _, ct := range cs.Items {
		name := containerName(ct.ID, ct.Names)
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
			name := imageName(im.ID, im.RepoTags)
			if _, err := cli.ImageRemove(ctx, im.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !strings.Contains(err.Error(), "No such image") {
				errs = append(errs, fmt.Errorf("image %s: %w", name, err))
			} else if err == nil {
				removed = append(removed, "image "+name)
			}
		}
	}
	for _, d := range buildDirs(run) {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("build directory %s: %w", d, err))
		} else {
			removed = append(removed, "directory "+d)
		}
	}
	return removed, errors.Join(errs...)
}

// buildDirs are the image build directories of run ("" = every run's) left in the temporary
// directory: a build removes its own, but not when csconform is killed during it.
func buildDirs(run string) []string {
	if run == "" {
		run = "*"
	} else if strings.ContainsAny(run, "/\\*?[") || strings.Contains(run, "..") {
		return nil // not a run id: it must not reach the file system as a pattern
	}
	ds, _ := filepath.Glob(filepath.Join(os.TempDir(), "csc-image-"+run+"-*"))
	return ds
}

// Leftovers lists what Cleanup would remove (what is left after it): every container, network,
// volume and image labelled with run ("" = every run's), named as Cleanup names them.
func Leftovers(ctx context.Context, run string) ([]string, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	defer cli.Close()
	f := runFilter(run)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	for _, ct := range cs.Items {
		out = append(out, "container "+containerName(ct.ID, ct.Names)+" ("+string(ct.State)+")")
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return out, err
	}
	for _, n := range ns.Items {
		out = append(out, "network "+n.Name)
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return out, err
	}
	for _, v := range vs.Items {
		out = append(out, "volume "+v.Name)
	}
	is, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		return out, err
	}
	for _, im := range is.Items {
		out = append(out, "image "+imageName(im.ID, im.RepoTags))
	}
	for _, d := range buildDirs(run) {
		out = append(out, "directory "+d)
	}
	return out, nil
}

// runFilter selects what carries run's label ("" = any run's).
func runFilter(run string) client.Filters {
	label := LabelRun
	if run != "" {
		label += "=" + run
	}
	return client.Filters{}.Add("label", label)
}

func containerName(id string, names []string) string {
	if len(names) > 0 {
		return strings.TrimPrefix(names[0], "/")
	}
	return id[:min(12, len(id))]
}

func imageName(id string, tags []string) string {
	if len(tags) > 0 {
		return tags[0]
	}
	return id
}
