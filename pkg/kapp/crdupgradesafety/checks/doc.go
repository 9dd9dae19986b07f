// Package checks is the engine's comparison of two CRDs: the CRD-level
// checks and one simultaneous walk of the old and new schema of each
// version (and of the new CRD's served versions), handing every change it
// finds to the policy (package finding). Compare runs them all. Each check
// is one file (check_<id>.go) with its table-driven test beside it.
//
// Files:
//
//	compare.go                     Compare: every check of one pair, in order; the versions both CRDs have
//	walk.go                        the schema walk: pairRun, node, the property checks in their order (propertyCheckOf); existingFieldRemoval, additionalProperties
//	walk_combinators.go            the walk of allOf, anyOf, oneOf and not, judged by meaning (probes)
//	schema_equality.go             SameSchema: two schemas alike but for documentation
//	kubeversion.go                 ValidatedAt: a CRD as the apiserver of a Kubernetes version validates it
//	check_crd.go                   scope, storedVersionRemoval, servedVersionRemoval; CompareStatus
//	check_versionlifecycle.go      versionLifecycle: a served version removed before it was deprecated
//	check_subresources.go          subresources: status and scale
//	check_selectablefields.go      selectableFields
//	check_servedversion.go         servedVersion: served versions that differ without a conversion webhook
//	check_storagepruning.go        storagePruning: fields a served version keeps that storage prunes; PrunedFields
//	check_preserveunknownfields.go preserveUnknownFields, on a property and on the whole CRD
//	check_bounds.go                minimum .. maxProperties, exclusiveMinimum, exclusiveMaximum (one helper)
//	check_formatbound.go           the bounds a numeric format implies (int32, int64, float, double)
//	check_celvalidation.go         celValidation: CEL rules added or changed
//	check_default.go               default
//	check_documentation.go         description, title, example: cleared, never findings
//	check_embeddedresource.go      embeddedResource
//	check_enum.go                  enum
//	check_format.go                format
//	check_ignoredkeywords.go       keywords the apiserver ignores for a type: cleared
//	check_intorstring.go           intOrString
//	check_listtype.go              listType (and list-map keys)
//	check_maptype.go               mapType
//	check_multipleof.go            multipleOf
//	check_nullable.go              nullable
//	check_pattern.go               pattern (regular-language inclusion, internal/relang); ComparePatterns
//	check_required.go              required
//	check_type.go                  type
//	check_uniqueitems.go           uniqueItems
//	check_unhandled.go             unhandled: whatever no check cleared
//	check_conversionordering.go    conversionOrdering (kapp deploy): ConversionNeedOf, ConversionOrderingFindings
package checks
