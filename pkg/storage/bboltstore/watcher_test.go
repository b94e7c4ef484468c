package bboltstore

import (
	"testing"
	"time"

	"k8s.io/apiserver/pkg/features"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

func TestWatch(t *testing.T) {
	t.Run("Watch", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestWatch(ctx, t, s)
	})
	t.Run("ClusterScopedWatch", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestClusterScopedWatch(ctx, t, s)
	})
	t.Run("NamespaceScopedWatch", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestNamespaceScopedWatch(ctx, t, s)
	})
	t.Run("DeleteTriggerWatch", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestDeleteTriggerWatch(ctx, t, s)
	})
	t.Run("WatchFromZero", func(t *testing.T) {
		ctx, s, db := testSetup(t)
		storagetesting.RunTestWatchFromZero(ctx, t, s, compaction(db))
	})
	t.Run("WatchFromNonZero", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestWatchFromNonZero(ctx, t, s)
	})
	t.Run("DelayedWatchDelivery", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestDelayedWatchDelivery(ctx, t, s)
	})
	t.Run("WatchError", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestWatchError(ctx, t, storeWithPrefixTransformer{s})
	})
	t.Run("WatchContextCancel", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestWatchContextCancel(ctx, t, s)
	})
	t.Run("WatcherTimeout", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestWatcherTimeout(ctx, t, s)
	})
	t.Run("WatchDeleteEventObjectHaveLatestRV", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(ctx, t, s)
	})
	t.Run("WatchInitializationSignal", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestWatchInitializationSignal(ctx, t, s)
	})
	t.Run("ProgressNotify", func(t *testing.T) {
		ctx, s, db := testSetup(t, withProgressInterval(time.Second, false))
		storagetesting.RunOptionalTestProgressNotify(ctx, t, s, increaseRV(db))
	})
	t.Run("WatchWithUnsafeDelete", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
		ctx, s, _ := testSetup(t)
		storagetesting.RunTestWatchWithUnsafeDelete(ctx, t, storeWithTransformerOverride{s}, errCorrupt)
	})
	t.Run("WatchDispatchBookmarkEvents", func(t *testing.T) {
		// With Config.Bookmarks, watches that allow bookmarks get one every
		// progress interval: the suite's expectedWatchBookmarks=true case.
		ctx, s, _ := testSetup(t, withProgressInterval(time.Second, true))
		storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, s, true)
	})
	t.Run("WatchBookmarksWithCorrectResourceVersion", func(t *testing.T) {
		ctx, s, _ := testSetup(t, withProgressInterval(time.Second, true))
		storagetesting.RunTestOptionalWatchBookmarksWithCorrectResourceVersion(ctx, t, s)
	})
	t.Run("WatchDispatchBookmarkEventsDisabled", func(t *testing.T) {
		ctx, s, _ := testSetup(t, withProgressInterval(time.Second, false))
		storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, s, false)
	})
	t.Run("SendInitialEventsBackwardCompatibility", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunSendInitialEventsBackwardCompatibility(ctx, t, s)
	})
	t.Run("WatchSemantics", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunWatchSemantics(ctx, t, s)
	})
	t.Run("WatchSemanticInitialEventsExtended", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunWatchSemanticInitialEventsExtended(ctx, t, s)
	})
	t.Run("WatchListMatchSingle", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunWatchListMatchSingle(ctx, t, s)
	})
	t.Run("WatchErrorEventIsBlockingFurtherEvent", func(t *testing.T) {
		ctx, s, _ := testSetup(t)
		storagetesting.RunWatchErrorIsBlockingFurtherEvents(ctx, t, storeWithPrefixTransformer{s})
	})
}
