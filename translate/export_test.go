package translate

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// TreeOfIsJSON says where treeOf(obj) and parseJSON(json.Marshal(obj)) differ.
func TreeOfIsJSON(obj any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	want, err := parseJSON(raw)
	if err != nil {
		return err
	}
	got, err := treeOf(obj)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("treeOf(%T) differs from its JSON %s", obj, raw)
	}
	return nil
}
