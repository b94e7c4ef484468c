package v1

// Defaults of the OLM v1 API reference (seed 000): ClusterCatalogSpec.priority
// 0 (the zero value), availabilityMode "Available";
// CatalogFilter.upgradeConstraintPolicy "CatalogProvided";
// CRDUpgradeSafetyPreflightConfig.enforcement "Strict". They are applied when
// a request body is decoded, so both create and update see them.

// SetDefaults_ClusterCatalogSpec fills in availabilityMode.
func SetDefaults_ClusterCatalogSpec(obj *ClusterCatalogSpec) {
	if obj.AvailabilityMode == "" {
		obj.AvailabilityMode = AvailabilityModeAvailable
	}
}

// SetDefaults_CatalogFilter fills in upgradeConstraintPolicy.
func SetDefaults_CatalogFilter(obj *CatalogFilter) {
	if obj.UpgradeConstraintPolicy == "" {
		obj.UpgradeConstraintPolicy = UpgradeConstraintPolicyCatalogProvided
	}
}

// SetDefaults_CRDUpgradeSafetyPreflightConfig fills in enforcement.
func SetDefaults_CRDUpgradeSafetyPreflightConfig(obj *CRDUpgradeSafetyPreflightConfig) {
	if obj.Enforcement == "" {
		obj.Enforcement = CRDUpgradeSafetyEnforcementStrict
	}
}
