// Package deploy holds no code: compose, Kubernetes, Prometheus and Grafana
// files for running the tiers apart (README.md here). Its test keeps
// check/, the offline validator of those files, runnable from a clean
// clone: check is a module of its own whose replace directive points at
// this checkout, so its go.mod must require at least the versions the
// root module requires.
package deploy
