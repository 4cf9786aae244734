package translate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ObjectYAMLIsJSONs says where ObjectYAML(obj) differs from the YAML of obj's JSON: the
// emitter's document of parseJSON(json.Marshal(obj)), or yaml.v3's where the emitter
// leaves it. Both refuse what encoding/json refuses.
func ObjectYAMLIsJSONs(obj any) error {
	got, err := ObjectYAML(obj)
	raw, jsonErr := json.Marshal(obj)
	if err != nil || jsonErr != nil {
		if err == nil || jsonErr == nil {
			return fmt.Errorf("ObjectYAML(%T) says %v, encoding/json %v", obj, err, jsonErr)
		}
		return nil
	}
	tree, err := parseJSON(raw)
	if err != nil {
		return err
	}
	e := emitter{}
	want := []byte(nil)
	switch err := e.document(tree); {
	case err == nil:
		want = e.buf
	case errors.Is(err, errUnplaced):
		if want, err = yamlV3(obj, raw); err != nil {
			return err
		}
	default:
		return err
	}
	if string(got) != string(want) {
		return fmt.Errorf("ObjectYAML(%T) wrote\n%s\nthe YAML of its JSON %s is\n%s", obj, got, raw, want)
	}
	return nil
}
