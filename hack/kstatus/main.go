// Command kstatus prints what sigs.k8s.io/cli-utils' kstatus (the library Flux, kubectl wait
// and Helm read status through) computes for each object it is given.
//
// Input on stdin: a JSON array of Kubernetes objects. Output on stdout: a JSON array with one
// {"status": ..., "message": ...} per object, in order. Sundial's tests use it as the oracle
// for the conditions its operator writes.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	// apimachinery's decoder keeps integers int64, as unstructured objects need them.
	var objects []map[string]interface{}
	input, err := io.ReadAll(os.Stdin)
	if err == nil {
		err = utiljson.Unmarshal(input, &objects)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: stdin must be a JSON array of objects: %v\n", err)
		os.Exit(2)
	}
	verdicts := make([]verdict, 0, len(objects))
	for index, object := range objects {
		result, err := status.Compute(&unstructured.Unstructured{Object: object})
		if err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: object %d: %v\n", index, err)
			os.Exit(1)
		}
		verdicts = append(verdicts, verdict{Status: result.Status.String(), Message: result.Message})
	}
	if err := json.NewEncoder(os.Stdout).Encode(verdicts); err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: %v\n", err)
		os.Exit(1)
	}
}
