package catalogredis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
)

// TestView_SupplierListMemoizedAnswersAsRedisDoes: the memoized supplier
// list of the process's copy answers what Redis answers, read after read,
// across the edges of binding windows (the same generation, another now)
// and after writes (another generation), for every rendering.
func TestView_SupplierListMemoizedAnswersAsRedisDoes(t *testing.T) {
	e := newViewEnv(t, time.Hour)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.writer.CreateChannel(ctx, catalog.ChannelInput{ID: "chan-a", Name: "a", CompanyName: "Co a"}))
	for _, sid := range []string{"s1", "s2", "s3"} {
		must(e.writer.CreateSupplier(ctx, admin, supplierIn(sid, "Supplier "+sid)))
		var pin catalog.ProductInput
		mustUnmarshal(t, `{"id":"p1","name":"P","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true}`, &pin)
		must(e.writer.UpsertProducts(ctx, admin, sid, []catalog.ProductInput{pin}))
	}
	opens, closes := now.Add(time.Hour), now.Add(2*time.Hour)
	must(e.writer.CreateBinding(ctx, admin, "s1", "p1", "chan-a", catalog.BindingInput{}))
	must(e.writer.CreateBinding(ctx, admin, "s2", "p1", "chan-a", catalog.BindingInput{Valid: &catalog.Validity{From: opens, Until: closes}}))
	e.caughtUp(t)

	// compare reads the list twice at each time from the view's store and
	// once from Redis, and returns the view's answers (one per time).
	times := []time.Time{now, opens.Add(-time.Millisecond), opens, opens.Add(30 * time.Minute),
		closes.Add(-time.Millisecond), closes, closes.Add(time.Hour), now}
	compare := func(stage string) []string {
		t.Helper()
		if !e.view.Fresh() {
			t.Fatalf("%s: the view is not fresh: the memoized path would not be taken", stage)
		}
		var got []string
		for _, v := range []SupplierVersion{SupplierV12, SupplierV13, SupplierV13Content} {
			for _, at := range times {
				want, err := e.redisStore.AppendSuppliers(ctx, nil, "chan-a", v, "", "", at)
				if err != nil {
					t.Fatal(err)
				}
				for read := range 2 {
					b, err := e.viewStore.AppendSuppliers(ctx, []byte("prefix"), "chan-a", v, "", "", at)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.HasPrefix(string(b), "prefix") {
						t.Fatalf("%s: the answer does not append to dst: %.40s", stage, b)
					}
					if b := string(b[len("prefix"):]); b != string(want) {
						t.Errorf("%s, version %d, at %v, read %d:\n view  %s\n redis %s", stage, v, at.Sub(now), read, b, want)
					}
				}
				if v == SupplierV12 {
					got = append(got, string(want))
				}
			}
		}
		e.view.lists.mu.RLock()
		n := len(e.view.lists.entries)
		e.view.lists.mu.RUnlock()
		if n != 3 {
			t.Fatalf("%s: %d memoized lists, want one per rendering (3)", stage, n)
		}
		return got
	}
	// ids listed at each of the times, in order.
	listed := func(answers []string) []string {
		var out []string
		for _, a := range answers {
			var ids []string
			for _, sid := range []string{"s1", "s2", "s3"} {
				if strings.Contains(a, `"id":"`+sid+`"`) {
					ids = append(ids, sid)
				}
			}
			out = append(out, strings.Join(ids, "+"))
		}
		return out
	}
	check := func(stage string, want []string) {
		t.Helper()
		got := listed(compare(stage))
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%s: listed %v, want %v", stage, got, want)
		}
	}
	check("windows", []string{"s1", "s1", "s1+s2", "s1+s2", "s1+s2", "s1", "s1", "s1"})

	must(e.writer.CreateBinding(ctx, admin, "s3", "p1", "chan-a", catalog.BindingInput{}))
	e.caughtUp(t)
	check("after binding s3", []string{"s1+s3", "s1+s3", "s1+s2+s3", "s1+s2+s3", "s1+s2+s3", "s1+s3", "s1+s3", "s1+s3"})

	must(e.writer.PutSupplier(ctx, admin, "s1", supplierIn("s1", "Renamed one")))
	if err := e.writer.DeleteBinding(ctx, admin, "s2", "p1", "chan-a"); err != nil {
		t.Fatal(err)
	}
	e.caughtUp(t)
	check("after renaming s1 and unbinding s2", []string{"s1+s3", "s1+s3", "s1+s3", "s1+s3", "s1+s3", "s1+s3", "s1+s3", "s1+s3"})
	b, err := e.viewStore.AppendSuppliers(ctx, nil, "chan-a", SupplierV12, "", "", now)
	if err != nil || !strings.Contains(string(b), "Renamed one") {
		t.Fatalf("after the rename the list reads %s (%v)", b, err)
	}
}
