// Command check validates deploy/ without a Docker engine or a cluster:
//
//   - compose.yaml is loaded by compose-go (the loader of docker compose, with
//     its JSON schema and interpolation), using .env.example;
//   - the Kubernetes manifests listed in kubernetes/kustomization.yaml, and
//     kubernetes/secret.example.yaml, are decoded strictly into the
//     k8s.io/api types (an unknown or misspelt field fails);
//   - every Switchback container's command and environment (compose service,
//     Deployment, Job) goes through internal/platform/config.Load, the code the binary
//     runs at start.
//
// Run from deploy/check:  go run .
// It is a separate module so that its dependencies stay out of the service's
// go.mod; the replace directive points it at this checkout.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/switchbackhq/switchback/internal/platform/config"

	"github.com/compose-spec/compose-go/v2/cli"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var failed bool

func fail(format string, a ...any) { failed = true; fmt.Printf("FAIL "+format+"\n", a...) }
func ok(format string, a ...any)   { fmt.Printf("ok   "+format+"\n", a...) }

func checkConfig(where string, args []string, env map[string]string) {
	if len(args) == 0 {
		fail("%s: no command", where)
		return
	}
	cmd := args[0]
	switch cmd {
	case "ingest", "process", "query", "dispatch", "migrate":
	default:
		fail("%s: unknown subcommand %q", where, cmd)
		return
	}
	for k := range env {
		if strings.HasPrefix(k, "SWITCHBACK_") {
			known := false
			for _, s := range config.Settings() {
				if s.Env == k {
					known = true
				}
			}
			for _, r := range config.Renames() { // former names, still read
				if r.OldEnv == k {
					known = true
				}
			}
			if !known {
				fail("%s: %s is not a setting of internal/platform/config", where, k)
			}
		}
	}
	c, err := config.Load("switchback "+cmd, args[1:], func(k string) string { return env[k] })
	if err != nil {
		fail("%s: config.Load: %v", where, err)
		return
	}
	if cmd != "migrate" && (c.EmbeddedKafka() || c.EmbeddedRedis()) {
		fail("%s: a single tier needs external Kafka and Redis", where)
		return
	}
	if c.ClickHouseURL == "" {
		fail("%s: SWITCHBACK_CLICKHOUSE_URL unset", where)
		return
	}
	ok("%s: `switchback %s` config loads (brokers=%v http=%s ops=%s log=%s)", where, cmd, c.KafkaBrokers, c.HTTPAddr, c.OpsAddr, c.LogFormat)
}

// compose loads compose.yaml with the overrides named (e.g. the Redis
// Cluster's) and checks every service.
func compose(deploy string, overrides ...string) {
	envFile := filepath.Join(deploy, ".env.example")
	files := []string{filepath.Join(deploy, "compose.yaml")}
	for _, o := range overrides {
		files = append(files, filepath.Join(deploy, o))
	}
	opts, err := cli.NewProjectOptions(files,
		cli.WithEnvFiles(envFile), cli.WithDotEnv, cli.WithName("switchback"))
	if err != nil {
		fail("compose options: %v", err)
		return
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		fail("compose load: %v", err)
		return
	}
	ok("%s loads and validates with compose-go (%d services)", strings.Join(append([]string{"compose.yaml"}, overrides...), " + "), len(p.Services))
	names := p.ServiceNames()
	sort.Strings(names)
	for _, n := range names {
		s := p.Services[n]
		for dep, d := range s.DependsOn {
			if _, found := p.Services[dep]; !found {
				fail("%s depends on unknown %s", n, dep)
			}
			if dep == n {
				fail("%s depends on itself", n)
			}
			fmt.Printf("       %s -> %s (%s)\n", n, dep, d.Condition)
			if d.Condition == "service_healthy" && (p.Services[dep].HealthCheck == nil || p.Services[dep].HealthCheck.Disable) {
				fail("%s waits for %s healthy, which has no healthcheck", n, dep)
			}
		}
		for _, v := range s.Volumes {
			if v.Type == "bind" {
				if _, err := os.Stat(v.Source); err != nil {
					fail("%s: bind source %s: %v", n, v.Source, err)
				}
			}
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
				fail("%s: Dockerfile: %v", n, err)
			}
			if _, err := os.Stat(filepath.Join(s.Build.Context, "go.mod")); err != nil {
				fail("%s: build context is not the module root: %v", n, err)
			}
			env := map[string]string{}
			for k, v := range s.Environment {
				if v != nil {
					env[k] = *v
				}
			}
			// .env.example's key is a placeholder (it must be replaced, and
			// the binary refuses it: checked here); check with a real one.
			if _, err := config.Load("x", nil, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "SWITCHBACK_SECRETS_KEY") {
				fail("compose service %s: .env.example's placeholder secrets key is not refused (%v)", n, err)
			}
			env["SWITCHBACK_SECRETS_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
			checkConfig("compose service "+n, s.Command, env)
			if n != "migrate" && (s.HealthCheck == nil || s.HealthCheck.Disable) {
				fail("%s has no healthcheck", n)
			}
			if d, found := s.DependsOn["migrate"]; n != "migrate" && (!found || d.Condition != "service_completed_successfully") {
				fail("%s does not wait for migrate", n)
			}
		}
		if s.Deploy != nil && s.Deploy.Replicas != nil {
			fmt.Printf("       %s replicas=%d\n", n, *s.Deploy.Replicas)
		}
	}
}

// kubeDocs reads the resources of kustomization.yaml, and the Secret
// template, split into YAML documents.
func kubeDocs(dir string) [][]byte {
	var k struct {
		Resources []string `json:"resources"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err == nil {
		err = yaml.Unmarshal(raw, &k)
	}
	if err != nil {
		fail("kustomization.yaml: %v", err)
		return nil
	}
	listed := map[string]bool{"kustomization.yaml": true, "secret.example.yaml": true}
	var docs [][]byte
	files := k.Resources
	if _, err := os.Stat(filepath.Join(dir, "secret.example.yaml")); err == nil {
		files = append(files, "secret.example.yaml")
	}
	for _, f := range files {
		listed[f] = true
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			fail("%v", err)
			continue
		}
		for _, d := range bytes.Split(data, []byte("\n---\n")) {
			if len(bytes.TrimSpace(d)) > 0 {
				docs = append(docs, d)
			}
		}
	}
	all, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range all {
		if !listed[filepath.Base(f)] {
			fail("kubernetes/%s is not in kustomization.yaml", filepath.Base(f))
		}
	}
	return docs
}

func kube(dir string) {
	docs := kubeDocs(dir)
	cms := map[string]map[string]string{}
	secrets := map[string]map[string]string{}
	type podOwner struct {
		where string
		spec  corev1.PodSpec
	}
	var pods []podOwner
	for _, d := range docs {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(d, &meta); err != nil {
			fail("yaml: %v", err)
			continue
		}
		var obj any
		switch meta.Kind {
		case "Namespace":
			obj = &corev1.Namespace{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		case "Secret":
			obj = &corev1.Secret{}
		case "Service":
			obj = &corev1.Service{}
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "Job":
			obj = &batchv1.Job{}
		default:
			fail("unexpected kind %q", meta.Kind)
			continue
		}
		if err := yaml.UnmarshalStrict(d, obj); err != nil {
			fail("%s: strict decode: %v", meta.Kind, err)
			continue
		}
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			cms[o.Name] = o.Data
			ok("ConfigMap %s/%s", o.Namespace, o.Name)
		case *corev1.Secret:
			secrets[o.Name] = o.StringData
			ok("Secret %s/%s (template)", o.Namespace, o.Name)
		case *corev1.Service:
			ok("Service %s/%s", o.Namespace, o.Name)
		case *appsv1.Deployment:
			sel := o.Spec.Selector.MatchLabels
			for k, v := range sel {
				if o.Spec.Template.Labels[k] != v {
					fail("Deployment %s: selector %s=%s does not match its pod labels", o.Name, k, v)
				}
			}
			pods = append(pods, podOwner{fmt.Sprintf("Deployment %s (replicas %d)", o.Name, *o.Spec.Replicas), o.Spec.Template.Spec})
		case *appsv1.StatefulSet:
			for k, v := range o.Spec.Selector.MatchLabels {
				if o.Spec.Template.Labels[k] != v {
					fail("StatefulSet %s: selector %s=%s does not match its pod labels", o.Name, k, v)
				}
			}
			ok("StatefulSet %s/%s (replicas %d)", o.Namespace, o.Name, *o.Spec.Replicas)
		case *batchv1.Job:
			pods = append(pods, podOwner{"Job " + o.Name, o.Spec.Template.Spec})
		case *corev1.Namespace:
			ok("Namespace %s", o.Name)
		}
	}
	for _, p := range pods {
		for _, c := range p.spec.Containers {
			if !strings.HasPrefix(c.Image, "switchback") {
				ok("%s: container %s (%s) is not Switchback's", p.where, c.Name, c.Image)
				continue
			}
			env := map[string]string{}
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					for k, v := range cms[ef.ConfigMapRef.Name] {
						env[k] = v
					}
				}
				if ef.SecretRef != nil {
					for k, v := range secrets[ef.SecretRef.Name] {
						env[k] = v
					}
				}
			}
			// The template's placeholder admin secret is rejected on purpose;
			// check with a real-looking one, then check the rejection.
			good := map[string]string{}
			for k, v := range env {
				good[k] = v
			}
			good["SWITCHBACK_ADMIN_SECRET"] = "0123456789abcdef0123"
			good["SWITCHBACK_SECRETS_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
			checkConfig(p.where, c.Args, good)
			if _, err := config.Load("x", nil, func(k string) string { return env[k] }); err == nil {
				fail("%s: placeholder Secret is accepted", p.where)
			} else {
				ok("%s: placeholder Secret rejected: %v", p.where, err)
			}
			ports := map[string]int32{}
			for _, cp := range c.Ports {
				ports[cp.Name] = cp.ContainerPort
			}
			for _, pr := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				if pr != nil && pr.HTTPGet != nil && ports[pr.HTTPGet.Port.StrVal] != 9090 {
					fail("%s: probe %s on port %v, not ops 9090", p.where, pr.HTTPGet.Path, pr.HTTPGet.Port)
				}
			}
		}
	}
}

func main() {
	deploy := ".."
	if len(os.Args) > 1 {
		deploy = os.Args[1]
	}
	compose(deploy)
	compose(deploy, "compose.redis-cluster.yaml")
	kube(filepath.Join(deploy, "kubernetes"))
	kube(filepath.Join(deploy, "kubernetes", "redis-cluster"))
	if failed {
		fmt.Println("deploy/ check FAILED")
		os.Exit(1)
	}
	fmt.Println("deploy/ check passed")
}
