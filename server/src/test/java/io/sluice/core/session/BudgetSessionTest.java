package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.budget.Budget;
import io.sluice.core.budget.BudgetBook;
import io.sluice.core.budget.BudgetCheck;
import io.sluice.core.budget.BudgetEvents;
import io.sluice.core.budget.BudgetNote;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.BudgetSettler;
import io.sluice.core.budget.BudgetStore;
import io.sluice.core.budget.LastRemaining;
import io.sluice.core.budget.Ledger;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Prices;
import io.sluice.core.budget.Terms;
import io.sluice.core.budget.WriteBack;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryBudgetStore;
import io.sluice.store.memory.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * Budgets through a session ({@link BudgetCheck} contributed at its order, {@link BudgetSettler} as
 * the listener) on {@link OneSlotPool}: the reservation uses the learned output reserve, and is
 * settled exactly once on every end path — complete with usage, cancelled while queued, refused by
 * the pool, an upstream error, cancelled while running, an answer Sluice did not see — and a spent
 * budget refuses {@code budget_exhausted} at the configured status without a Retry-After.
 */
class BudgetSessionTest {
  private final FakeTicker ticker = new FakeTicker();
  private final MutableClock clock = new MutableClock(Instant.parse("2026-12-05T10:00:00Z"));
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final AdmissionSessionTest.ManualTimer timer = new AdmissionSessionTest.ManualTimer();
  private final List<SessionEvent> events = new ArrayList<>();
  private final AdmissionController controller = OneSlotPool.controller();
  private final Counting store = new Counting(new InMemoryBudgetStore(1000));
  private final Tenant acme = new Tenant("acme", TierPolicy.defaults("pro"));
  private long limit = 100_000;
  private long burst; // pacing's bucket (0: not paced)
  private int status = 402;
  private Budget.Meter meter = Budget.Meter.TOKENS;
  private Period period = new Period.Calendar(Period.Unit.DAY, ZoneOffset.UTC, DayOfWeek.MONDAY);
  private final List<CompletableFuture<Void>> waits = new ArrayList<>();
  private io.sluice.core.budget.Delay delay = ms -> CompletableFuture.completedFuture(null);

  /** Counts each settle (reserved, actual). */
  static final class Counting implements BudgetStore {
    final BudgetStore inner;
    final List<long[]> settles = new ArrayList<>();

    Counting(BudgetStore inner) {
      this.inner = inner;
    }

    @Override
    public CompletionStage<Ledger.Outcome> reserve(
        String key, String id, Period period, Terms terms, long cost, Instant now) {
      return inner.reserve(key, id, period, terms, cost, now);
    }

    @Override
    public synchronized CompletionStage<Integer> settle(
        String key, Period period, Terms terms, Hold hold, long actual, Instant now) {
      settles.add(new long[] {hold.units(), actual});
      return inner.settle(key, period, terms, hold, actual, now);
    }

    @Override
    public CompletionStage<Long> shrink(
        String key, Period p, Terms t, Hold hold, long units, Instant now) {
      return inner.shrink(key, p, t, hold, units, now);
    }

    @Override
    public CompletionStage<Ledger.State> read(String key, Period p, Terms t, Instant now) {
      return inner.read(key, p, t, now);
    }
  }

  private Sessions sessions() {
    Budget daily = new Budget("daily", meter, period, new Terms(limit, List.of(0.5), burst), null);
    BudgetPolicy p =
        new BudgetPolicy(
            true,
            status,
            Duration.ofSeconds(5),
            1000,
            null,
            0.1,
            Prices.NONE,
            Map.of("pro", List.of(daily)),
            Map.of(),
            Map.of(),
            Map.of(),
            List.of(),
            BudgetPolicy.Degrade.OFF);
    BudgetBook book =
        new BudgetBook(
            p,
            store,
            null,
            0.1,
            "t_",
            BudgetBook.FailureMode.OPEN,
            delay,
            clock,
            BudgetEvents.NONE,
            new WriteBack(p.maxEntries(), BudgetEvents.NONE),
            new LastRemaining(p.maxEntries()));
    return OneSlotPool.sessionsBuilder(
            controller,
            quotas,
            ticker,
            clock,
            timer,
            SessionListener.of(events::add, new BudgetSettler(book)))
        .check(BudgetCheck.ORDER, BudgetCheck.factory(book))
        .build();
  }

  private AdmissionSession decide(Sessions on, AdmissionSessionTest.Front f, int maxTokens) {
    Subject s = OneSlotPool.chat(acme, ticker.nanos(), null, Duration.ofSeconds(5).toNanos());
    AdmissionSession session = on.open(s, f, Runnable::run, SessionSteps.NONE);
    byte[] body =
        ("{\"model\":\"m\",\"max_tokens\":"
                + maxTokens
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
            .getBytes(StandardCharsets.UTF_8);
    session.begin(false, false, -1, ticker.nanos());
    session.decideWithBody(body, 0, body.length, ticker.nanos());
    return session;
  }

  private static void answer(AdmissionSession s, int st, String json) {
    s.running().headers(st, "application/json", true);
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    s.running().body(body, 0, body.length, true);
  }

  private static BudgetNote note(AdmissionSession s) {
    return s.facts().note(BudgetNote.class);
  }

  @Test
  void complete_settledOnceWithTheReportedUsage_reservedTheLearnedReserveNotMaxTokens() {
    Sessions on = sessions();
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession s = decide(on, f, 100_000);
    assertThat(f.calls).containsExactly("admitted(body)");
    long reserved = note(s).reserved().get(0).units();
    assertThat(reserved)
        .isLessThan(100_000)
        .isEqualTo(
            s.facts().estimate().tokens().inputTokens()
                + s.facts().estimate().tokens().outputReserveTokens());
    answer(s, 200, "{\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":21}}");
    s.release(Outcome.COMPLETED);
    s.end(Outcome.COMPLETED);
    s.releaseQuietly(Outcome.ERROR);
    assertThat(store.settles).hasSize(1);
    assertThat(store.settles.get(0)).containsExactly(reserved, 30);
  }

  /**
   * A request made to wait for the budget (running requests hold it) is held at once, before the
   * wait (Envoy's message_timeout would end it otherwise), once; then decided as usual.
   */
  @Test
  void waitingForTheBudget_theFrontEndHoldsTheMessageAtOnce_once() {
    AdmissionSession first = decide(sessions(), new AdmissionSessionTest.Front(), 100);
    long reserved = note(first).reserved().get(0).units();
    limit = 2 * reserved - 1; // the running reservation leaves no room for a second until spent
    delay =
        ms -> {
          CompletableFuture<Void> w = new CompletableFuture<>();
          waits.add(w);
          return w;
        };
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    decide(sessions(), f, 100);
    assertThat(waits).hasSize(1);
    assertThat(f.calls).containsExactly("held");
    waits.get(0).complete(null); // still held by the first: waits again, no second hold
    assertThat(waits).hasSize(2);
    assertThat(f.calls).containsExactly("held");
    answer(first, 200, "{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}");
    first.release(Outcome.COMPLETED);
    first.end(Outcome.COMPLETED);
    waits.get(1).complete(null);
    assertThat(f.calls).containsExactly("held", "admitted(body)");
  }

  @Test
  void cachedInput_reportedByTheUpstream_isSettledApart_fromTheUncachedInput() {
    String cached =
        "{\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":5,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":80}}}";
    long[] settled = new long[2];
    Budget.Meter[] meters = {Budget.Meter.INPUT_TOKENS, Budget.Meter.CACHED_INPUT_TOKENS};
    for (int i = 0; i < 2; i++) {
      meter = meters[i];
      store.settles.clear();
      AdmissionSession s = decide(sessions(), new AdmissionSessionTest.Front(), 100);
      answer(s, 200, cached);
      s.release(Outcome.COMPLETED);
      s.end(Outcome.COMPLETED);
      assertThat(store.settles).hasSize(1);
      settled[i] = store.settles.get(0)[1];
    }
    assertThat(settled).containsExactly(20, 80); // uncached input 100 - 80; cached 80
  }

  @Test
  void queuedThenCancelled_andRefusedByThePool_settledOnceWithNothing() {
    Sessions on = sessions();
    AdmissionSession running = decide(on, new AdmissionSessionTest.Front(), 100);
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession queued = decide(on, f2, 100);
    assertThat(f2.calls).containsExactly("held");
    queued.end(Outcome.CANCELLED);
    queued.end(Outcome.CANCELLED);
    assertThat(store.settles).hasSize(1);
    assertThat(store.settles.get(0)[1]).isZero();
    AdmissionSessionTest.Front f3 = new AdmissionSessionTest.Front();
    AdmissionSession expired = decide(on, f3, 100);
    ticker.advance(Duration.ofSeconds(6));
    timer.fireAll(); // refused queue_timeout
    assertThat(f3.calls).containsExactly("held", "refused");
    expired.end(Outcome.CANCELLED);
    assertThat(store.settles).hasSize(2);
    assertThat(store.settles.get(1)[1]).isZero();
    running.release(Outcome.COMPLETED);
    running.end(Outcome.COMPLETED);
    assertThat(store.settles).hasSize(3);
  }

  @Test
  void upstreamError_cancelledRunning_unseenAnswer_eachSettledOnceByTheirCharge() {
    Sessions on = sessions();
    AdmissionSession err = decide(on, new AdmissionSessionTest.Front(), 100);
    answer(err, 500, "{\"error\":{}}");
    err.release(Outcome.COMPLETED);
    err.end(Outcome.COMPLETED);
    assertThat(store.settles).hasSize(1);
    assertThat(store.settles.get(0)[1]).isZero(); // an upstream error without usage: nothing

    AdmissionSession cut = decide(on, new AdmissionSessionTest.Front(), 100);
    long input = cut.facts().estimate().tokens().inputTokens();
    cut.end(Outcome.CANCELLED); // gone before any answer: the prompt went upstream
    assertThat(store.settles).hasSize(2);
    assertThat(store.settles.get(1)[1]).isEqualTo(input);

    AdmissionSession unseen = decide(on, new AdmissionSessionTest.Front(), 100);
    long reserved = note(unseen).reserved().get(0).units();
    unseen.running().headers(200, "application/json", true);
    unseen.release(Outcome.COMPLETED); // the answer went by unseen: the reservation stands
    unseen.end(Outcome.COMPLETED);
    assertThat(store.settles).hasSize(3);
    assertThat(store.settles.get(2)).containsExactly(reserved, reserved);
  }

  @Test
  void spentBudget_refusedBudgetExhausted_atTheConfiguredStatus_retryAfterOnlyWith429() {
    limit = 60;
    Sessions on = sessions();
    AdmissionSession s = decide(on, new AdmissionSessionTest.Front(), 10);
    answer(s, 200, "{\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":30}}");
    s.release(Outcome.COMPLETED);
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession refused = decide(on, f, 10);
    assertThat(f.calls).containsExactly("refused");
    assertThat(f.refusedWith).isEqualTo(Reason.BUDGET_EXHAUSTED);
    assertThat(f.refusedStatus).isEqualTo(402);
    assertThat(f.refusedRetryAfter).isZero();
    assertThat(events).anySatisfy(e -> assertThat(e).isInstanceOf(SessionEvent.Noted.class));
    refused.end(Outcome.CANCELLED);
    assertThat(store.settles).hasSize(1); // nothing held by the refused one

    status = 429;
    AdmissionSessionTest.Front f429 = new AdmissionSessionTest.Front();
    decide(sessions(), f429, 10);
    assertThat(f429.refusedStatus).isEqualTo(429);
    assertThat(f429.refusedRetryAfter).isEqualTo(Duration.ofHours(14).toSeconds());
  }

  @Test
  void pastAThreshold_theAdmittedRequestDisclosesWhatIsLeft() {
    limit = 100;
    Sessions on = sessions();
    AdmissionSession s = decide(on, new AdmissionSessionTest.Front(), 10);
    answer(s, 200, "{\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":30}}");
    s.release(Outcome.COMPLETED);
    AdmissionSession next = decide(on, new AdmissionSessionTest.Front(), 5);
    Map<String, String> h = next.running().disclosed();
    assertThat(h).containsEntry(BudgetCheck.NAME_HEADER, "daily");
    assertThat(h).containsKey(BudgetCheck.REMAINING_HEADER);
    assertThat(h).containsEntry(BudgetCheck.RESET_HEADER, "2026-12-06T00:00:00Z");
    next.release(Outcome.COMPLETED);
  }

  /**
   * Spends the budget at {@code at} (one answer of 60 tokens on a limit of 60) and answers the
   * refusal of the next request: what the check tells the client.
   */
  private RefusalDetail spentAt(String at, Period p, int st) {
    clock.set(Instant.parse(at));
    limit = 60;
    period = p;
    status = st;
    Sessions on = sixtySpent();
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession refused = decide(on, f, 10);
    assertThat(f.refusedWith).isEqualTo(Reason.BUDGET_EXHAUSTED);
    lastRetryAfter = f.refusedRetryAfter;
    RefusalDetail d = refused.running().refusalDetail();
    refused.end(Outcome.CANCELLED);
    return java.util.Objects.requireNonNull(d, "the refusal's detail");
  }

  private long lastRetryAfter;

  /** Sessions on the budget as configured, with one answer of 60 tokens spent. */
  private Sessions sixtySpent() {
    Sessions on = sessions();
    AdmissionSession s = decide(on, new AdmissionSessionTest.Front(), 10);
    answer(s, 200, "{\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":30}}");
    s.release(Outcome.COMPLETED);
    return on;
  }

  private static Period day(String zone) {
    return new Period.Calendar(Period.Unit.DAY, java.time.ZoneId.of(zone), DayOfWeek.MONDAY);
  }

  @Test
  void spentBudget_thePeriodsEnd_inTheBodyAndAHeader_rfc3339WithTheZonesOffset_acrossDst() {
    // Berlin, 29 March 2026: clocks go forward at 02:00 (a 23 h day); it ends at +02:00
    RefusalDetail berlin = spentAt("2026-03-29T08:00:00Z", day("Europe/Berlin"), 429);
    assertThat(berlin.fields())
        .containsExactly(
            Map.entry(BudgetCheck.BUDGET_FIELD, "daily"),
            Map.entry(BudgetCheck.PERIOD_END_FIELD, "2026-03-30T00:00:00+02:00"));
    assertThat(berlin.headers())
        .containsExactly(
            Map.entry(BudgetCheck.NAME_HEADER, "daily"),
            Map.entry(BudgetCheck.RESET_HEADER, "2026-03-30T00:00:00+02:00"));
    // the Retry-After (429 only) runs to the same instant: 22:00Z, 14 h after 08:00Z
    assertThat(lastRetryAfter).isEqualTo(Duration.ofHours(14).toSeconds());

    // New York, 1 November 2026: clocks go back at 02:00 (a 25 h day); it ends at -05:00
    RefusalDetail ny = spentAt("2026-11-01T12:00:00Z", day("America/New_York"), 402);
    assertThat(ny.fields())
        .containsEntry(BudgetCheck.PERIOD_END_FIELD, "2026-11-02T00:00:00-05:00");
    assertThat(ny.headers()).containsEntry(BudgetCheck.RESET_HEADER, "2026-11-02T00:00:00-05:00");
    assertThat(lastRetryAfter).as("402: no Retry-After").isZero();

    // a half-hour zone, a week starting on Sunday, a month, UTC, a rolling window (told in UTC)
    Period kolkataWeek =
        new Period.Calendar(
            Period.Unit.WEEK, java.time.ZoneId.of("Asia/Kolkata"), DayOfWeek.SUNDAY);
    assertThat(spentAt("2026-12-05T10:00:00Z", kolkataWeek, 402).fields())
        .containsEntry(BudgetCheck.PERIOD_END_FIELD, "2026-12-06T00:00:00+05:30");
    Period sydneyMonth =
        new Period.Calendar(
            Period.Unit.MONTH, java.time.ZoneId.of("Australia/Sydney"), DayOfWeek.MONDAY);
    // Sydney leaves daylight saving on 5 April 2026: March ends at +11:00, April at +10:00
    assertThat(spentAt("2026-03-20T00:00:00Z", sydneyMonth, 402).fields())
        .containsEntry(BudgetCheck.PERIOD_END_FIELD, "2026-04-01T00:00:00+11:00");
    assertThat(spentAt("2026-04-20T00:00:00Z", sydneyMonth, 402).fields())
        .containsEntry(BudgetCheck.PERIOD_END_FIELD, "2026-05-01T00:00:00+10:00");
    assertThat(spentAt("2026-12-05T10:00:00Z", day("UTC"), 402).fields())
        .containsEntry(BudgetCheck.PERIOD_END_FIELD, "2026-12-06T00:00:00Z");
    Period rolling = new Period.Rolling(Duration.ofHours(24), 24);
    assertThat(spentAt("2026-12-05T10:20:00Z", rolling, 402).fields())
        .as("a rolling window renews as its current slice ends")
        .containsEntry(BudgetCheck.PERIOD_END_FIELD, "2026-12-05T11:00:00Z");
  }

  @Test
  void pastAThreshold_theResetHeader_carriesTheZonesOffset() {
    clock.set(Instant.parse("2026-03-29T08:00:00Z"));
    limit = 100;
    period = day("Europe/Berlin");
    Sessions on = sixtySpent();
    AdmissionSession next = decide(on, new AdmissionSessionTest.Front(), 5);
    assertThat(next.running().disclosed())
        .containsEntry(BudgetCheck.RESET_HEADER, "2026-03-30T00:00:00+02:00");
    assertThat(next.running().refusalDetail()).as("admitted: nothing to tell").isNull();
    next.release(Outcome.COMPLETED);
  }

  /**
   * The decision record's {@code budgets} part ({@link io.sluice.observability.BudgetRecorder}):
   * each budget's name, scope, group, meter, window, what was reserved and left, where it was held,
   * and, once the request ended, what it was charged.
   */
  @Test
  void decisionRecord_carriesEachBudgetsReservationAndCharge() {
    var recorder =
        new io.sluice.observability.BudgetRecorder(
            new io.sluice.observability.BudgetMetrics(
                new io.micrometer.core.instrument.simple.SimpleMeterRegistry(), ticker::nanos));
    AdmissionSession s = decide(sessions(), new AdmissionSessionTest.Front(), 100);
    long reserved = note(s).reserved().get(0).units();
    var running = io.sluice.api.v1.AdmissionRecord.newBuilder();
    recorder.write(s.facts(), running);
    assertThat(running.getBudgetsList()).hasSize(1);
    var b = running.getBudgets(0);
    assertThat(List.of(b.getName(), b.getScope(), b.getGroup(), b.getMeter(), b.getWindow()))
        .containsExactly("daily", "tenant", "pro", "tokens", "d:2026-12-05");
    assertThat(b.getReserved()).isEqualTo(reserved);
    assertThat(b.getRemaining()).isEqualTo(limit - reserved);
    assertThat(b.getHeld()).isEqualTo("store");
    assertThat(b.hasCharged()).as("not ended: nothing charged yet").isFalse();

    answer(s, 200, "{\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":21}}");
    s.release(Outcome.COMPLETED);
    s.end(Outcome.COMPLETED);
    var ended = io.sluice.api.v1.AdmissionRecord.newBuilder();
    recorder.write(s.facts(), ended);
    assertThat(ended.getBudgets(0).getCharged()).as("the reported usage").isEqualTo(30);
  }

  /**
   * A refused request's decision record names the budget that refused it (name, scope, group,
   * meter) and, when it is spent, its period's end as the client was told it; from the facts the
   * refusal's event carries (what the decision log writes), for every budget refusal.
   */
  @Test
  void refusedRecord_namesTheRefusingBudget_andASpentOnesPeriodEnd() {
    period =
        new Period.Calendar(
            Period.Unit.DAY, java.time.ZoneId.of("Europe/Berlin"), DayOfWeek.MONDAY);
    limit = 60;
    Sessions on = sixtySpent();
    var spent = refusedRecord(on, Reason.BUDGET_EXHAUSTED).getBudgetRefusal();
    assertThat(List.of(spent.getName(), spent.getScope(), spent.getGroup(), spent.getMeter()))
        .containsExactly("daily", "tenant", "pro", "tokens");
    assertThat(spent.getPeriodEnd()).isEqualTo("2026-12-06T00:00:00+01:00");

    limit = 100_000;
    burst = 1; // the first request empties the bucket; the next waits ~10 s for it, past maxWait
    on = sessions();
    AdmissionSession first = decide(on, new AdmissionSessionTest.Front(), 10);
    var admitted = io.sluice.api.v1.AdmissionRecord.newBuilder();
    recorder().write(first.facts(), admitted);
    assertThat(admitted.hasBudgetRefusal()).as("admitted: no refusal").isFalse();
    var paced = refusedRecord(on, Reason.BUDGET_PACED).getBudgetRefusal();
    assertThat(paced.getName()).isEqualTo("daily");
    assertThat(paced.getPeriodEnd()).as("not spent: no period end").isEmpty();
    first.release(Outcome.COMPLETED);

    burst = 0;
    meter = Budget.Meter.MONEY; // no price table: the model is unpriced
    var unpriced = refusedRecord(sessions(), Reason.BUDGET_UNPRICED).getBudgetRefusal();
    assertThat(List.of(unpriced.getName(), unpriced.getMeter(), unpriced.getPeriodEnd()))
        .containsExactly("daily", "money", "");
  }

  /** The decision record of the next request, refused {@code why}, from its refusal's facts. */
  private io.sluice.api.v1.AdmissionRecord refusedRecord(Sessions on, Reason why) {
    events.clear();
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession s = decide(on, f, 10);
    assertThat(f.refusedWith).isEqualTo(why);
    SessionEvent.Refused e =
        events.stream()
            .filter(SessionEvent.Refused.class::isInstance)
            .map(SessionEvent.Refused.class::cast)
            .findFirst()
            .orElseThrow();
    var b = io.sluice.api.v1.AdmissionRecord.newBuilder();
    recorder().write(e.facts(), b);
    s.end(Outcome.CANCELLED);
    return b.build();
  }

  private io.sluice.observability.BudgetRecorder recorder() {
    return new io.sluice.observability.BudgetRecorder(
        new io.sluice.observability.BudgetMetrics(
            new io.micrometer.core.instrument.simple.SimpleMeterRegistry(), ticker::nanos));
  }
}
