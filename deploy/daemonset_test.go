package deploy

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// daemonSet is daemonset.yaml's DaemonSet and its sandfs container.
func daemonSet(t *testing.T) (*appsv1.DaemonSet, corev1.Container) {
	t.Helper()
	b, err := os.ReadFile("daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	ds, ok := obj.(*appsv1.DaemonSet)
	if !ok || len(ds.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("daemonset.yaml holds %T, want one DaemonSet with one container", obj)
	}
	return ds, ds.Spec.Template.Spec.Containers[0]
}

// flags are a container's --name=value arguments (the manifest writes
// each flag so; a bare --flag maps to "").
func flags(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("command %q args %q: want the image's entrypoint with args serve …", c.Command, c.Args)
	}
	out := map[string]string{}
	for _, a := range c.Args[1:] {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || out[k] != "" {
			t.Fatalf("argument %q: want each flag once as --name=value", a)
		}
		out[k] = v
	}
	return out
}

// mountAt is the container's volume mount holding dir and the volume it
// mounts.
func mountAt(t *testing.T, ds *appsv1.DaemonSet, c corev1.Container, dir string) (corev1.VolumeMount, corev1.Volume) {
	t.Helper()
	var best corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if (dir == m.MountPath || strings.HasPrefix(dir, m.MountPath+"/")) && len(m.MountPath) > len(best.MountPath) {
			best = m
		}
	}
	if best.Name == "" {
		t.Fatalf("no volume mount holds %s", dir)
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name == best.Name {
			return best, v
		}
	}
	t.Fatalf("volume mount %s names no volume", best.Name)
	return best, corev1.Volume{}
}

// TestDaemonSetGivesTheDaemonWhatItNeeds checks the pod against the
// daemon's flags: each directory a flag names is on a hostPath, the mount
// directory propagates to the host, the token is a Secret's file.
func TestDaemonSetGivesTheDaemonWhatItNeeds(t *testing.T) {
	ds, c := daemonSet(t)
	spec := ds.Spec.Template.Spec
	f := flags(t, c)
	for _, name := range []string{"root", "sandboxes", "mount-all", "state", "listen", "token-file", "direct-mount", "inotify-instances"} {
		if _, ok := f[name]; !ok {
			t.Errorf("no --%s", name)
		}
	}
	for _, name := range []string{"token", "no-auth", "insecure-no-token"} {
		if _, ok := f[name]; ok {
			t.Errorf("--%s: the token comes from a Secret file, never argv", name)
		}
	}
	for _, e := range c.Env {
		if e.Name == "SANDFS_TOKEN" {
			t.Errorf("SANDFS_TOKEN in env: the token comes from --token-file")
		}
	}

	if r, d := f["root"], f["sandboxes"]; r == d || strings.HasPrefix(r, d+"/") || strings.HasPrefix(f["mount-all"], d+"/") {
		t.Errorf("--root=%s or --mount-all=%s inside --sandboxes=%s: served (or refused) as a sandbox of DIR", r, f["mount-all"], d)
	}
	t.Run("/dev/fuse", func(t *testing.T) {
		m, v := mountAt(t, ds, c, "/dev/fuse")
		if m.MountPath != "/dev/fuse" || v.HostPath == nil || v.HostPath.Path != "/dev/fuse" ||
			v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathCharDev {
			t.Errorf("/dev/fuse: mount at %s of volume %s (hostPath %+v), want the host's /dev/fuse as a CharDevice", m.MountPath, v.Name, v.HostPath)
		}
		sc := c.SecurityContext
		if sc == nil || sc.Privileged == nil || !*sc.Privileged {
			t.Errorf("container not privileged: Bidirectional propagation and mount(2) need it")
		}
		if sc != nil && sc.RunAsUser != nil && *sc.RunAsUser != 0 {
			t.Errorf("runAsUser %d: the daemon runs as root", *sc.RunAsUser)
		}
	})
	t.Run("directories on the host", func(t *testing.T) {
		for _, name := range []string{"root", "sandboxes", "mount-all", "state"} {
			dir := f[name]
			m, v := mountAt(t, ds, c, dir)
			if v.HostPath == nil || !strings.HasPrefix(v.HostPath.Path, "/var/lib/sandfs/") {
				t.Errorf("--%s=%s is on volume %s (%+v), want a hostPath under /var/lib/sandfs", name, dir, m.Name, v.VolumeSource)
			}
			if m.ReadOnly {
				t.Errorf("--%s=%s: its volume is read-only", name, dir)
			}
		}
	})
	t.Run("the mounts propagate to the host", func(t *testing.T) {
		m, _ := mountAt(t, ds, c, f["mount-all"])
		if m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationBidirectional {
			got := "none"
			if m.MountPropagation != nil {
				got = string(*m.MountPropagation)
			}
			t.Errorf("volume mount %s of --mount-all's directory: propagation %s, want Bidirectional", m.Name, got)
		}
	})
	t.Run("token from a Secret", func(t *testing.T) {
		m, v := mountAt(t, ds, c, f["token-file"])
		if v.Secret == nil || v.Secret.SecretName == "" || !m.ReadOnly {
			t.Fatalf("--token-file=%s is on %+v (readOnly %v), want a read-only Secret volume", f["token-file"], v.VolumeSource, m.ReadOnly)
		}
		if v.Secret.DefaultMode == nil {
			t.Errorf("Secret volume has no defaultMode: the token would be 0644")
		} else if mode := *v.Secret.DefaultMode; mode&0o077 != 0 {
			t.Errorf("Secret volume defaultMode %04o: others could read the token", mode)
		}
		file := strings.TrimPrefix(f["token-file"], m.MountPath+"/")
		found := false
		for _, it := range v.Secret.Items {
			found = found || it.Path == file
		}
		if !found {
			t.Errorf("Secret items %+v hold no %s", v.Secret.Items, file)
		}
	})
	t.Run("probes on /health", func(t *testing.T) {
		_, port, _ := strings.Cut(f["listen"], ":")
		if !strings.HasPrefix(f["listen"], "0.0.0.0:") || port != "7420" {
			t.Errorf("--listen=%s, want 0.0.0.0:7420", f["listen"])
		}
		if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 7420 {
			t.Fatalf("ports %+v, want 7420", c.Ports)
		}
		for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" {
				t.Errorf("%s probe: want an httpGet of /health", name)
				continue
			}
			if pt := p.HTTPGet.Port; pt.IntValue() != 7420 && pt.String() != c.Ports[0].Name {
				t.Errorf("%s probe port %s, want 7420", name, pt.String())
			}
		}
	})
	t.Run("resources", func(t *testing.T) {
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("resources %+v, want cpu and memory requests and a memory limit", c.Resources)
		}
	})
	if spec.ServiceAccountName == "" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("serviceAccountName %q automount %v: want its own account and no API token", spec.ServiceAccountName, spec.AutomountServiceAccountToken)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 15 {
		t.Errorf("terminationGracePeriodSeconds %v: want more than --shutdown-timeout", g)
	}
}
