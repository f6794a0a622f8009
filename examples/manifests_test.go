package examples

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// manifests are the decoded objects of examples/kubernetes, by kind.
type manifests struct {
	statefulSets map[string]*appsv1.StatefulSet // by file
	configMaps   map[string]*corev1.ConfigMap   // by name
	secrets      map[string]*corev1.Secret
	services     []*corev1.Service
	pdbs         []*policyv1.PodDisruptionBudget
	podMonitors  []*monitoringv1.PodMonitor
}

// loadManifests decodes every document of every file strictly into its
// Kubernetes API type: a misspelt or misplaced field fails the test.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in kubernetes/: %v", err)
	}
	m := manifests{statefulSets: map[string]*appsv1.StatefulSet{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---\n")) {
			where := fmt.Sprintf("%s document %d", f, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 StatefulSet":
				o := &appsv1.StatefulSet{}
				m.statefulSets[f] = o
				obj = o
			case "v1 ConfigMap":
				obj = &corev1.ConfigMap{}
			case "v1 Secret":
				obj = &corev1.Secret{}
			case "v1 Service":
				o := &corev1.Service{}
				m.services = append(m.services, o)
				obj = o
			case "policy/v1 PodDisruptionBudget":
				o := &policyv1.PodDisruptionBudget{}
				m.pdbs = append(m.pdbs, o)
				obj = o
			case "monitoring.coreos.com/v1 PodMonitor":
				o := &monitoringv1.PodMonitor{}
				m.podMonitors = append(m.podMonitors, o)
				obj = o
			default:
				t.Fatalf("%s: %q %q is not a kind this test knows; add it", where, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Secret:
				m.secrets[o.Name] = o
			}
		}
	}
	return m
}

func TestManifestsDecodeStrictlyAndFitTogether(t *testing.T) {
	m := loadManifests(t)
	if len(m.statefulSets) != 2 || len(m.pdbs) != 1 || len(m.services) != 2 || len(m.podMonitors) != 1 {
		t.Fatalf("want 2 StatefulSets, a PDB, 2 Services (metrics, wait) and a PodMonitor; got %d, %d, %d, %d",
			len(m.statefulSets), len(m.pdbs), len(m.services), len(m.podMonitors))
	}
	for f, sts := range m.statefulSets {
		t.Run(filepath.Base(f), func(t *testing.T) {
			native := strings.Contains(f, "native")
			spec := sts.Spec.Template.Spec
			hc, where := findContainer(spec, "hmssync")
			switch {
			case hc == nil:
				t.Fatal("no hmssync container")
			case native && (where != "initContainers" || hc.RestartPolicy == nil || *hc.RestartPolicy != corev1.ContainerRestartPolicyAlways):
				t.Errorf("native sidecar: want an init container with restartPolicy Always, got %s with %v", where, hc.RestartPolicy)
			case !native && where != "containers":
				t.Errorf("plain sidecar: want a second container, got %s", where)
			}
			if fe, _ := findContainer(spec, "fe"); fe == nil || fe.ReadinessProbe == nil {
				t.Error("the FE container and its readiness probe are missing")
			}
			checkSidecarContainer(t, hc, spec, m)
			sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(sts.Spec.Template.Labels)) {
				t.Errorf("the selector %v does not match the pod template's labels %v", sts.Spec.Selector, sts.Spec.Template.Labels)
			}
			for _, pdb := range m.pdbs {
				if s, _ := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); !s.Matches(labels.Set(sts.Spec.Template.Labels)) {
					t.Errorf("PodDisruptionBudget %s does not select the FE pods", pdb.Name)
				}
			}
			for _, svc := range m.services {
				if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(sts.Spec.Template.Labels)) {
					t.Errorf("Service %s does not select the FE pods", svc.Name)
				}
				for _, p := range svc.Spec.Ports {
					if !hasPort(hc, p.TargetPort.String()) {
						t.Errorf("Service %s targets port %s, which the sidecar does not name", svc.Name, p.TargetPort.String())
					}
				}
			}
			for _, pm := range m.podMonitors {
				if s, _ := metav1.LabelSelectorAsSelector(&pm.Spec.Selector); !s.Matches(labels.Set(sts.Spec.Template.Labels)) {
					t.Errorf("PodMonitor %s does not select the FE pods", pm.Name)
				}
				for _, ep := range pm.Spec.PodMetricsEndpoints {
					if ep.Port == nil || !hasPort(hc, *ep.Port) {
						t.Errorf("PodMonitor %s scrapes port %v, which the sidecar does not name", pm.Name, ep.Port)
					}
				}
				if _, ok := sts.Spec.Template.Labels[pm.Spec.JobLabel]; !ok {
					t.Errorf("PodMonitor %s takes the job from label %q, which the pods lack", pm.Name, pm.Spec.JobLabel)
				}
			}
		})
	}
}

// checkSidecarContainer checks what the sidecar needs from its pod: the member
// name, the probes, and every mounted file present in its ConfigMap or Secret.
func checkSidecarContainer(t *testing.T, c *corev1.Container, spec corev1.PodSpec, m manifests) {
	t.Helper()
	podName := false
	for _, e := range c.Env {
		if e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			podName = true
		}
		if strings.Contains(strings.ToUpper(e.Name), "PASSWORD") && e.Value != "" {
			t.Errorf("env %s carries a password in the manifest; mount it from a Secret", e.Name)
		}
	}
	if !podName {
		t.Error("POD_NAME is not set from the downward API (metadata.name)")
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/livez" {
		t.Errorf("liveness probe: want GET /livez, got %+v", p)
	}
	if c.ReadinessProbe != nil {
		t.Error("the sidecar has a readiness probe: it would take the FE out of its Service whenever etcd is down (see the manifest's comment)")
	}
	if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the sidecar must run as non-root with a read-only root filesystem")
	}
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	// Every file sidecar.yaml names must be mounted from a key that exists.
	mounted := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			t.Errorf("mount %s: no volume of that name", vm.Name)
			continue
		}
		for _, key := range volumeKeys(t, v, m) {
			if vm.SubPath != "" {
				if key == vm.SubPath {
					mounted[vm.MountPath] = true
				}
				continue
			}
			mounted[filepath.Join(vm.MountPath, key)] = true
		}
	}
	cfgPath := ""
	for i, a := range c.Args {
		if a == "--config" && i+1 < len(c.Args) {
			cfgPath = c.Args[i+1]
		}
	}
	if !mounted[cfgPath] {
		t.Fatalf("the --config file %q is not mounted (mounted: %v)", cfgPath, keys(mounted))
	}
	for _, f := range configFiles(t, m) {
		if !mounted[f] {
			t.Errorf("sidecar.yaml names %s, which no mount provides (mounted: %v)", f, keys(mounted))
		}
	}
}

func volumeKeys(t *testing.T, v corev1.Volume, m manifests) []string {
	t.Helper()
	var out []string
	switch {
	case v.ConfigMap != nil:
		cm, ok := m.configMaps[v.ConfigMap.Name]
		if !ok {
			t.Errorf("volume %s: ConfigMap %s is not among the manifests", v.Name, v.ConfigMap.Name)
		}
		for k := range cm.Data {
			out = append(out, k)
		}
	case v.Secret != nil:
		s, ok := m.secrets[v.Secret.SecretName]
		if !ok {
			t.Errorf("volume %s: Secret %s is not among the manifests", v.Name, v.Secret.SecretName)
		}
		for k := range s.StringData {
			out = append(out, k)
		}
		for k := range s.Data {
			out = append(out, k)
		}
	}
	return out
}

// configFiles are the file paths the ConfigMap's sidecar.yaml names (every key
// ending in _file), after checking that each of its keys is one that
// examples/sidecar.yaml documents.
func configFiles(t *testing.T, m manifests) []string {
	t.Helper()
	if len(m.configMaps) != 1 {
		t.Fatalf("want one ConfigMap, got %d", len(m.configMaps))
	}
	var text string
	for _, cm := range m.configMaps {
		text = cm.Data["sidecar.yaml"]
	}
	var cfg, doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("the ConfigMap's sidecar.yaml: %v", err)
	}
	raw, err := os.ReadFile("sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	flatten("", doc, func(k string, _ any) { known[k] = true })
	var files []string
	flatten("", cfg, func(k string, v any) {
		if !known[k] {
			t.Errorf("the ConfigMap's sidecar.yaml sets %s, which examples/sidecar.yaml does not document", k)
		}
		// Password and TLS files end in _file; a catalog's Kerberos files are
		// its keytab and krb5_conf.
		fileKey := strings.HasSuffix(k, "_file") || strings.HasSuffix(k, "hms_auth.keytab") || strings.HasSuffix(k, "hms_auth.krb5_conf")
		if s, ok := v.(string); ok && fileKey && s != "" {
			files = append(files, s)
		}
	})
	if len(files) == 0 {
		t.Fatal("the ConfigMap's sidecar.yaml names no password or TLS file; the mount check above says nothing")
	}
	return files
}

// flatten calls fn with each leaf's dotted path; list items are "[]".
func flatten(prefix string, v any, fn func(string, any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, c, fn)
		}
	case []any:
		if len(x) > 0 {
			if _, isMap := x[0].(map[string]any); isMap {
				for _, c := range x {
					flatten(prefix+"[]", c, fn)
				}
				return
			}
		}
		fn(prefix, v)
	default:
		fn(prefix, v)
	}
}

func findContainer(spec corev1.PodSpec, name string) (*corev1.Container, string) {
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return &spec.InitContainers[i], "initContainers"
		}
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i], "containers"
		}
	}
	return nil, ""
}

func hasPort(c *corev1.Container, name string) bool {
	for _, p := range c.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
