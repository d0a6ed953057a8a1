package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kinds are the objects a manifest here may hold, by apiVersion and kind.
var kinds = map[string]func() any{
	"v1/Namespace":      func() any { return new(corev1.Namespace) },
	"v1/ServiceAccount": func() any { return new(corev1.ServiceAccount) },
	"v1/Pod":            func() any { return new(corev1.Pod) },
	"apps/v1/DaemonSet": func() any { return new(appsv1.DaemonSet) },
}

// decode decodes one YAML document strictly into the typed object of its
// kind: a field the type lacks, a field given twice or a value of the
// wrong type is an error.
func decode(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	mk, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown apiVersion/kind %q/%q", tm.APIVersion, tm.Kind)
	}
	obj := mk()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// documents splits a file into its YAML documents, leaving out empty ones.
func documents(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(d []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(d, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(append(out, l...), '\n')
		}
	}
	return out
}

// manifests decodes every *.yaml here, by file name.
func manifests(t *testing.T) map[string][]any {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	out := map[string][]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range documents(b) {
			obj, err := decode(d)
			if err != nil {
				t.Errorf("%s, document %d: %v", f, i+1, err)
				continue
			}
			out[f] = append(out[f], obj)
		}
	}
	return out
}

// TestManifestsDecodeStrictly: every manifest is valid for its API type,
// and every image of every pod names a tag that is not latest.
func TestManifestsDecodeStrictly(t *testing.T) {
	for f, objs := range manifests(t) {
		for _, obj := range objs {
			var spec *corev1.PodSpec
			switch o := obj.(type) {
			case *appsv1.DaemonSet:
				spec = &o.Spec.Template.Spec
			case *corev1.Pod:
				spec = &o.Spec
			}
			if spec == nil {
				continue
			}
			for _, c := range append(spec.InitContainers, spec.Containers...) {
				if err := pinned(c.Image); err != nil {
					t.Errorf("%s: container %s: %v", f, c.Name, err)
				}
			}
		}
	}
}

// pinned refuses an image without a tag or digest, or tagged latest.
func pinned(image string) error {
	if strings.Contains(image, "@sha256:") {
		return nil
	}
	last := path.Base(image)
	i := strings.LastIndex(last, ":")
	if i < 0 {
		return fmt.Errorf("image %q has no tag (the runtime takes :latest)", image)
	}
	if last[i+1:] == "latest" {
		return fmt.Errorf("image %q is :latest", image)
	}
	return nil
}

// TestStrictDecodingCatchesTypos: the decoder the manifests go through
// refuses the mistakes a person makes, so the test above means something.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	ds, err := os.ReadFile("daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, old, new, want string }{
		{"misspelt field", "mountPropagation:", "mountPropogation:", `unknown field "mountPropogation"`},
		{"field at the wrong level", "      hostNetwork: true", "      hostNetwork: true\n      periodSeconds: 5", `unknown field "periodSeconds"`},
		{"wrong type", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: thirty", "cannot unmarshal string"},
		{"duplicate field", "      hostNetwork: true", "      hostNetwork: true\n      hostNetwork: false", `key "hostNetwork" already set`},
		{"unknown kind", "kind: DaemonSet", "kind: DaemonSett", `unknown apiVersion/kind "apps/v1"/"DaemonSett"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !bytes.Contains(ds, []byte(c.old)) {
				t.Fatalf("daemonset.yaml has no %q", c.old)
			}
			bad := bytes.Replace(ds, []byte(c.old), []byte(c.new), 1)
			_, err := decode(bad)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("decode: %v, want an error with %q", err, c.want)
			}
		})
	}
	if _, err := decode(ds); err != nil {
		t.Fatalf("the unchanged daemonset.yaml: %v", err)
	}
}

// TestPinnedImage: the tag check itself.
func TestPinnedImage(t *testing.T) {
	for image, ok := range map[string]bool{
		"sandfs:0.21.0": true, "registry:5000/sandfs:1": true, "sandfs@sha256:ab": true,
		"sandfs": false, "sandfs:latest": false, "registry:5000/sandfs": false, "r:5000/x/sandfs:latest": false,
	} {
		if err := pinned(image); (err == nil) != ok {
			t.Errorf("pinned(%q) = %v, want ok=%v", image, err, ok)
		}
	}
}
