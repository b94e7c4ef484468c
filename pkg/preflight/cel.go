package preflight

import (
	"fmt"
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// unsafeValidationChanges judges the x-kubernetes-validations (CEL rules) of one schema node
// and describes the changes that may reject objects the old schema accepted:
//   - a rule removed, or a rule kept with only message, messageExpression, reason or fieldPath
//     changed: safe (these do not change which objects are valid);
//   - a rule kept with optionalOldSelf changed: unhandled;
//   - a rule added (a changed rule text counts as removed + added): safe only when
//     ruleHoldsWithoutNewFields proves it, otherwise unhandled.
func unsafeValidationChanges(old, new *apiextensionsv1.JSONSchemaProps) []string {
	if len(new.XValidations) == 0 {
		return nil
	}
	oldRules := make(map[string]apiextensionsv1.ValidationRule, len(old.XValidations))
	for _, r := range old.XValidations {
		oldRules[r.Rule] = r
	}
	var changes []string
	for _, r := range new.XValidations {
		o, existed := oldRules[r.Rule]
		if existed {
			if optionalOldSelf(o) != optionalOldSelf(r) {
				changes = append(changes, fmt.Sprintf("x-kubernetes-validations rule %s: optionalOldSelf changed", shortJSON(quote(r.Rule))))
			}
			continue
		}
		if ok, why := ruleHoldsWithoutNewFields(r, old, new); !ok {
			changes = append(changes, fmt.Sprintf("x-kubernetes-validations rule added: %s (%s)", shortJSON(quote(r.Rule)), why))
		}
	}
	return changes
}

func optionalOldSelf(r apiextensionsv1.ValidationRule) bool {
	return r.OptionalOldSelf != nil && *r.OptionalOldSelf
}

// ruleHoldsWithoutNewFields reports whether rule r, added to a node whose schema changed from old
// to new, is true for every object the old schema accepted. Such objects cannot have a property
// that the old node did not declare (it was pruned), unless the old node preserved unknown
// fields. The proof evaluates the rule with self as an object whose new properties are absent
// and whose old properties are unknown values, and oldSelf unknown; CEL's commutative logical
// operators let `unknown || true` be true. It requires that the rule use self only through field
// selection (self.x, has(self.x)), so that the absent fields are the only facts it relies on.
// When the rule cannot be proven, the second result says why.
func ruleHoldsWithoutNewFields(r apiextensionsv1.ValidationRule, old, new *apiextensionsv1.JSONSchemaProps) (bool, string) {
	if old.XPreserveUnknownFields != nil && *old.XPreserveUnknownFields {
		return false, "old schema preserves unknown fields"
	}
	var added []string
	for name := range new.Properties {
		if _, ok := old.Properties[name]; !ok {
			added = append(added, name)
		}
	}
	if len(added) == 0 {
		return false, "no new optional property it could guard"
	}
	sort.Strings(added)
	quoted := make([]string, len(added))
	for i, name := range added {
		quoted[i] = quote(name)
	}
	for _, req := range new.Required {
		if _, ok := old.Properties[req]; !ok {
			return false, fmt.Sprintf("new property %q is required", req)
		}
	}
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType), cel.Variable("oldSelf", cel.DynType))
	if err != nil {
		return false, "CEL environment: " + err.Error()
	}
	parsed, iss := env.Parse(r.Rule)
	if iss.Err() != nil {
		return false, "does not parse"
	}
	if !selfOnlyThroughFields(parsed.NativeRep().Expr(), false) {
		return false, "uses self other than through its fields"
	}
	prg, err := env.Program(parsed, cel.EvalOptions(cel.OptPartialEval))
	if err != nil {
		return false, "cannot be evaluated here"
	}
	unknowns := []*cel.AttributePatternType{cel.AttributePattern("oldSelf")}
	for name := range old.Properties {
		unknowns = append(unknowns, cel.AttributePattern("self").QualString(name))
	}
	vars, err := cel.PartialVars(map[string]any{"self": map[string]any{}}, unknowns...)
	if err != nil {
		return false, "cannot be evaluated here"
	}
	out, _, _ := prg.Eval(vars)
	if out == types.True {
		return true, ""
	}
	return false, "not provably true when the new properties " + listValues(quoted) + " are unset"
}

// selfOnlyThroughFields reports whether every reference to the variable self in e is the
// operand of a field selection. underSelect is true when e is the operand of a selection.
func selfOnlyThroughFields(e ast.Expr, underSelect bool) bool {
	switch e.Kind() {
	case ast.IdentKind:
		return e.AsIdent() != "self" || underSelect
	case ast.SelectKind:
		return selfOnlyThroughFields(e.AsSelect().Operand(), true)
	case ast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() && !selfOnlyThroughFields(call.Target(), false) {
			return false
		}
		for _, a := range call.Args() {
			if !selfOnlyThroughFields(a, false) {
				return false
			}
		}
		return true
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			if !selfOnlyThroughFields(el, false) {
				return false
			}
		}
		return true
	case ast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			me := entry.AsMapEntry()
			if !selfOnlyThroughFields(me.Key(), false) || !selfOnlyThroughFields(me.Value(), false) {
				return false
			}
		}
		return true
	case ast.StructKind:
		for _, entry := range e.AsStruct().Fields() {
			if !selfOnlyThroughFields(entry.AsStructField().Value(), false) {
				return false
			}
		}
		return true
	case ast.ComprehensionKind:
		comp := e.AsComprehension()
		if comp.IterVar() == "self" || comp.AccuVar() == "self" || (comp.HasIterVar2() && comp.IterVar2() == "self") {
			return false // shadows self: keep it simple and refuse
		}
		for _, sub := range []ast.Expr{comp.IterRange(), comp.AccuInit(), comp.LoopCondition(), comp.LoopStep(), comp.Result()} {
			if !selfOnlyThroughFields(sub, false) {
				return false
			}
		}
		return true
	default:
		return true
	}
}
