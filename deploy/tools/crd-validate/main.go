// crd-validate strictly validates prometheus-operator custom resources (ServiceMonitor, PodMonitor,
// PrometheusRule) by decoding each YAML document into the operator's own Go types with unknown fields and
// wrong types rejected (sigs.k8s.io/json.UnmarshalStrict, the API server's strict decoder). The Kubernetes
// JSON schemas that kubernetes-validate bundles cover only built-in kinds; the operator's CRDs are generated from these same Go types, so decoding
// into them is the schema check. A document of any other kind is an error, never a silent pass.
//
// usage: crd-validate FILE... (multi-document YAML); prints one line per document, exit 1 on any failure.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

func newObject(h header) (any, error) {
	if h.APIVersion != "monitoring.coreos.com/v1" {
		return nil, fmt.Errorf("no schema for apiVersion %q kind %q (crd-validate knows monitoring.coreos.com/v1 ServiceMonitor, PodMonitor, PrometheusRule)", h.APIVersion, h.Kind)
	}
	switch h.Kind {
	case "ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, nil
	case "PodMonitor":
		return &monitoringv1.PodMonitor{}, nil
	case "PrometheusRule":
		return &monitoringv1.PrometheusRule{}, nil
	}
	return nil, fmt.Errorf("no schema for kind %q in monitoring.coreos.com/v1", h.Kind)
}

// decodeStrict converts the YAML document to JSON as kubectl does (no coercion towards the target types, so a
// number where a string belongs is an error, as on the API server) and decodes it with the API machinery's strict,
// case-sensitive JSON decoder: unknown and duplicate fields are errors.
func decodeStrict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(j, obj)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

func validateFile(path string) (ok, failed int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return ok, failed, nil
		}
		if err != nil {
			return ok, failed, fmt.Errorf("%s: reading YAML: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var h header
		if err := yaml.Unmarshal(doc, &h); err != nil {
			fmt.Printf("ERROR %s: not a Kubernetes object: %v\n", path, err)
			failed++
			continue
		}
		if h.APIVersion == "" && h.Kind == "" {
			continue // a document holding only comments
		}
		name := fmt.Sprintf("%s/%s", h.Kind, h.Metadata.Name)
		obj, err := newObject(h)
		if err == nil {
			err = decodeStrict(doc, obj)
		}
		if err == nil && h.Metadata.Name == "" {
			err = errors.New("metadata.name is required")
		}
		if err != nil {
			fmt.Printf("ERROR %s %s: %v\n", path, name, err)
			failed++
			continue
		}
		fmt.Printf("OK %s %s\n", path, name)
		ok++
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crd-validate FILE...")
		os.Exit(2)
	}
	var ok, failed int
	for _, path := range os.Args[1:] {
		o, f, err := validateFile(path)
		ok, failed = ok+o, failed+f
		if err != nil {
			fmt.Fprintln(os.Stderr, "ERROR", err)
			os.Exit(2)
		}
	}
	fmt.Printf("%d valid, %d invalid\n", ok, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
