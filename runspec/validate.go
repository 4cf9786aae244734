package runspec

import (
	"errors"
	"fmt"
)

// Validate reports every structural problem of the spec at once: a mode it does not know,
// a payload that does not match the mode, a missing plan ID, a bad context layer.
func (s Spec) Validate() error {
	var errs []error
	if s.PlanID == "" {
		errs = append(errs, errors.New("plan_id is empty"))
	}
	payloads := map[Mode]bool{
		ModeTask:        s.Task != nil,
		ModeGet:         s.Get != nil,
		ModePut:         s.Put != nil,
		ModeCheck:       s.Check != nil,
		ModeLoadVar:     s.LoadVar != nil,
		ModeSetPipeline: s.SetPipeline != nil,
		ModeRun:         s.Run != nil,
		ModeResolve:     s.Resolve != nil,
		ModePublish:     s.Publish != nil,
		ModeAcross:      s.Across != nil,
		ModeJoin:        s.Join != nil,
		ModeVerdict:     s.Verdict != nil,
	}
	if _, known := payloads[s.Mode]; !known {
		errs = append(errs, fmt.Errorf("unknown mode %q", s.Mode))
	}
	for m, set := range payloads {
		switch {
		case m == s.Mode && !set:
			errs = append(errs, fmt.Errorf("mode %s needs a %q payload", m, m))
		case m != s.Mode && set:
			errs = append(errs, fmt.Errorf("mode %s has a %q payload", s.Mode, m))
		}
	}
	if g := s.Get; g != nil && g.Latest && (g.Version != nil || g.VersionFrom != "") {
		errs = append(errs, errors.New("get: latest with a version or a version_from: the version is given"))
	}
	for i, l := range s.Context {
		switch l.Kind {
		case LayerTimeout, LayerDetach:
		case LayerFailFast:
			if l.Child == nil {
				errs = append(errs, fmt.Errorf("context[%d]: a fail_fast layer needs its child", i))
			}
		default:
			errs = append(errs, fmt.Errorf("context[%d]: unknown kind %q", i, l.Kind))
		}
		if l.ID == "" {
			errs = append(errs, fmt.Errorf("context[%d]: id is empty", i))
		}
	}
	for i, sl := range s.AcrossSlots {
		if sl.Plan == "" || sl.Index < 0 {
			errs = append(errs, fmt.Errorf("across_slots[%d]: a slot needs a plan and an index of 0 or more", i))
		}
	}
	if a := s.Across; a != nil {
		if len(a.Vars) == 0 {
			errs = append(errs, errors.New("across: no vars"))
		}
		if a.Slots < 1 {
			errs = append(errs, fmt.Errorf("across: %d slots: there must be at least one", a.Slots))
		}
	}
	for _, t := range []*Node{joinTree(s.Join), verdictTree(s.Verdict)} {
		if t != nil {
			if err := t.Validate(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid runner spec: %w", err)
	}
	return nil
}

func joinTree(j *Join) *Node {
	if j == nil {
		return nil
	}
	return &j.Tree
}

func verdictTree(v *Verdict) *Node {
	if v == nil {
		return nil
	}
	return &v.Tree
}

// Validate checks that every node has the children its kind needs.
func (n Node) Validate() error {
	var errs []error
	n.validate("tree", &errs)
	return errors.Join(errs...)
}

func (n Node) validate(at string, errs *[]error) {
	at = fmt.Sprintf("%s[%s]", at, n.ID)
	if n.ID == "" {
		*errs = append(*errs, fmt.Errorf("%s: id is empty", at))
	}
	wantStep, wantHook := false, false
	switch n.Kind {
	case KindLeaf, KindDo, KindInParallel, KindAcross, KindRetry:
	case KindTry, KindTimeout:
		wantStep = true
	case KindOnSuccess, KindOnFailure, KindOnError, KindOnAbort, KindEnsure:
		wantStep, wantHook = true, true
	default:
		*errs = append(*errs, fmt.Errorf("%s: unknown kind %q", at, n.Kind))
	}
	if wantStep != (n.Step != nil) || wantHook != (n.Hook != nil) {
		*errs = append(*errs, fmt.Errorf("%s: a %s node has step %t and hook %t", at, n.Kind, n.Step != nil, n.Hook != nil))
	}
	if n.Kind == KindLeaf && len(n.Steps) > 0 || wantStep && len(n.Steps) > 0 {
		*errs = append(*errs, fmt.Errorf("%s: a %s node has steps", at, n.Kind))
	}
	for _, c := range n.Steps {
		c.validate(at, errs)
	}
	if n.Step != nil {
		n.Step.validate(at, errs)
	}
	if n.Hook != nil {
		n.Hook.validate(at, errs)
	}
}
