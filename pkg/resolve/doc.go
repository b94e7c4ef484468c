// Package resolve chooses the bundle to install for a ClusterExtension from
// File-Based Catalog content, explains every refusal precisely, checks
// bundle dependencies against the other installed extensions, and computes
// the deprecation conditions.
//
// It is pure: it reads catalog content only through a PackageSource, one
// package of one catalog at a time, and never writes anything. The entry
// points are Resolve and ParseVersionRange (shared with admission
// validation). Specifications: seed 000 (ClusterExtension CatalogFilter and
// conditions), seed 001 (FBC schemas and properties), seed 002 (preference
// order), issue 6 (the rules as a whole).
package resolve
