package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.retry.RetryAttemptCheck;
import io.sluice.core.retry.RetryControl;
import io.sluice.core.retry.RetryPolicy;
import io.sluice.core.session.AdmissionCheck.Release;
import io.sluice.core.session.AdmissionCheck.Stage;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryAttemptStore;
import io.sluice.store.memory.InMemoryStore;
import java.lang.management.ManagementFactory;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link CheckChain} and {@link CheckRun} on fake checks: the order, the stages, the skips (nothing
 * asked, nothing allocated), and every hold given back exactly once, in reverse order of
 * acquisition, on every end path: a refusal by check k, a refusal by the pool, the front end's end
 * while a check's store answers, the request's end after it ran, a shadow pass. Store answers that
 * come later run in a queued serial context the test drains, as the front end's would.
 */
class CheckChainTest {
  private final List<String> log = new ArrayList<>(); // asks and releases, in order
  private final Queue<Runnable> serial = new ArrayDeque<>(); // the request's serial context
  private final List<String> refusals = new ArrayList<>();
  private final List<Throwable> storeFailures = new ArrayList<>();
  private int thens;

  /** What a fake check answers. */
  enum Answer {
    HOLD, // go on, holding something
    PASS, // go on, holding nothing
    REFUSE, // refused, holding nothing
    HOLD_AND_REFUSE, // refused, holding something (given back with the refusal)
    SKIP, // does not apply
    FAIL // the store's answer fails outright
  }

  /** A check that logs its asks and its hold's releases; its answer at once, or when told. */
  final class Fake implements AdmissionCheck<String> {
    final String name;
    final Stage stage;
    final Answer answer;
    final boolean keptByPass;
    @Nullable CompletableFuture<String> pending; // non-null: answers when the test completes it
    boolean deferred;
    int stageReads; // calls of stage()

    Fake(String name, Stage stage, Answer answer) {
      this(name, stage, answer, false);
    }

    Fake(String name, Stage stage, Answer answer, boolean keptByPass) {
      this.name = name;
      this.stage = stage;
      this.answer = answer;
      this.keptByPass = keptByPass;
    }

    Fake deferred() {
      deferred = true;
      return this;
    }

    @Override
    public Stage stage() {
      stageReads++;
      return stage;
    }

    @Override
    public boolean applies(Request r) {
      return answer != Answer.SKIP;
    }

    @Override
    public CompletionStage<String> ask(Request r) {
      log.add("ask " + name);
      if (answer == Answer.FAIL) {
        return CompletableFuture.failedFuture(new IllegalStateException("store down"));
      }
      if (deferred) {
        pending = new CompletableFuture<>();
        return pending;
      }
      return CompletableFuture.completedFuture(name);
    }

    void answerNow() {
      CompletableFuture<String> p = pending;
      assertThat(p).as("an outstanding ask").isNotNull();
      p.complete(name);
    }

    @Override
    public Verdict answered(String a, Request r) {
      Refusal no = new Refusal(Reason.TENANT_RATE, 429, 1, "no " + name);
      return switch (answer) {
        case HOLD -> hold(null);
        case HOLD_AND_REFUSE -> hold(no);
        case REFUSE -> no;
        default -> Continue.INSTANCE;
      };
    }

    private Held hold(@Nullable Refusal refusal) {
      return new Held() {
        @Override
        public @Nullable Refusal refusal() {
          return refusal;
        }

        @Override
        protected boolean keptByPass(boolean wouldReject) {
          return keptByPass;
        }

        @Override
        protected void release(Release how) {
          log.add("release " + name + " " + how);
        }
      };
    }
  }

  private static final AdmissionCheck.Request REQUEST =
      new AdmissionCheck.Request() {
        @Override
        public Subject subject() {
          return OneSlotPool.chat(new Tenant("acme", TierPolicy.defaults("pro")), 0, null, 0);
        }

        @Override
        public @Nullable TokenEstimate estimate() {
          return null;
        }

        @Override
        public long workUnits() {
          return 0;
        }
      };

  private CheckRun run(AdmissionCheck<?>... checks) {
    return runOn(new CheckChain(List.of(checks)));
  }

  private CheckRun runOn(CheckChain chain) {
    return new CheckRun(chain, REQUEST, serial::add, SessionSteps.NONE) {
      @Override
      void refused(AdmissionCheck.Refusal r, long receivedNanos) {
        refusals.add(r.message());
      }

      @Override
      void storeFailed(Throwable cause) {
        storeFailures.add(cause);
      }
    };
  }

  private void then() {
    thens++;
  }

  private void drain() {
    for (Runnable r = serial.poll(); r != null; r = serial.poll()) {
      r.run();
    }
  }

  private Fake h(String name, Answer a) {
    return new Fake(name, Stage.HEADERS, a);
  }

  private Fake e(String name, Answer a) {
    return new Fake(name, Stage.ESTIMATE, a);
  }

  private List<String> releases() {
    return log.stream().filter(s -> s.startsWith("release")).toList();
  }

  @Test
  void allPass_inOrder_byStage_thenEndAfterTheRun_releasesOnceInReverse() {
    CheckRun r = run(h("a", Answer.HOLD), h("b", Answer.PASS), e("c", Answer.HOLD));
    r.run(Stage.HEADERS, 0, this::then);
    assertThat(log).containsExactly("ask a", "ask b");
    assertThat(thens).isEqualTo(1);
    r.run(Stage.ESTIMATE, 0, this::then);
    assertThat(log).containsExactly("ask a", "ask b", "ask c");
    assertThat(thens).isEqualTo(2);

    r.release(Release.ENDED); // the permit went back
    r.release(Release.CANCELLED); // every later end path: nothing more
    r.release(Release.ENDED);
    assertThat(releases()).containsExactly("release c ENDED", "release a ENDED");
    assertThat(refusals).isEmpty();
  }

  /** Check k of four refuses: the holds before it go back in reverse, once; none after it runs. */
  @ParameterizedTest
  @ValueSource(ints = {0, 1, 2, 3})
  void refusedByCheckK_givesBackWhatCameBefore_inReverse_once(int k) {
    List<Fake> fakes = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Answer a = i == k ? Answer.REFUSE : Answer.HOLD;
      fakes.add(i < 2 ? h("c" + i, a) : e("c" + i, a));
    }
    CheckRun r = run(fakes.toArray(new Fake[0]));
    r.run(Stage.HEADERS, 0, this::then);
    if (k >= 2) {
      r.run(Stage.ESTIMATE, 0, this::then);
    }
    assertThat(refusals).containsExactly("no c" + k);
    r.release(Release.REFUSED); // what the session's refuse does
    r.release(Release.CANCELLED); // then the front end's end
    List<String> asked = new ArrayList<>();
    List<String> released = new ArrayList<>();
    for (int i = 0; i <= k; i++) {
      asked.add("ask c" + i);
    }
    for (int i = k - 1; i >= 0; i--) {
      released.add("release c" + i + " REFUSED");
    }
    assertThat(log.stream().filter(s -> s.startsWith("ask")).toList()).isEqualTo(asked);
    assertThat(releases()).isEqualTo(released);
    assertThat(thens).isEqualTo(k >= 2 ? 1 : 0); // the headers stage finished when k was later
  }

  @Test
  void heldAndRefused_givesItsOwnHoldBackFirst() {
    CheckRun r = run(h("a", Answer.HOLD), h("b", Answer.HOLD_AND_REFUSE), h("c", Answer.HOLD));
    r.run(Stage.HEADERS, 0, this::then);
    assertThat(refusals).containsExactly("no b");
    r.release(Release.REFUSED);
    assertThat(log).containsExactly("ask a", "ask b", "release b REFUSED", "release a REFUSED");
    assertThat(thens).isZero();
  }

  @Test
  void refusedByThePool_afterEveryCheck_releasesAllInReverse() {
    CheckRun r = run(h("a", Answer.HOLD), e("b", Answer.HOLD), e("c", Answer.HOLD));
    r.run(Stage.HEADERS, 0, this::then);
    r.run(Stage.ESTIMATE, 0, this::then);
    r.release(Release.REFUSED); // the pool refused: the session's refuse
    r.release(Release.ENDED);
    assertThat(releases())
        .containsExactly("release c REFUSED", "release b REFUSED", "release a REFUSED");
  }

  /** The front end ends while check k's store answers: its late hold goes back as it comes. */
  @ParameterizedTest
  @ValueSource(ints = {0, 1, 2})
  void endWhileCheckKsStoreAnswers_lateHoldGoesBack_laterChecksNeverAsked(int k) {
    Fake[] fakes = {e("a", Answer.HOLD), e("b", Answer.HOLD), e("c", Answer.HOLD)};
    fakes[k].deferred();
    CheckRun r = run(fakes);
    r.run(Stage.ESTIMATE, 0, this::then);
    r.release(Release.CANCELLED); // the client left
    fakes[k].answerNow();
    drain();
    List<String> expected = new ArrayList<>();
    for (int i = k - 1; i >= 0; i--) {
      expected.add("release " + fakes[i].name + " CANCELLED");
    }
    expected.add("release " + fakes[k].name + " CANCELLED");
    assertThat(releases()).isEqualTo(expected);
    assertThat(log.stream().filter(s -> s.startsWith("ask")).count()).isEqualTo(k + 1);
    assertThat(thens).isZero();
    assertThat(refusals).isEmpty();
    r.release(Release.ENDED);
    assertThat(releases()).hasSize(k + 1);
  }

  @Test
  void aLateAnswer_resumesTheStage_inTheSerialContext() {
    Fake b = e("b", Answer.HOLD).deferred();
    CheckRun r = run(e("a", Answer.HOLD), b, e("c", Answer.HOLD));
    r.run(Stage.ESTIMATE, 0, this::then);
    assertThat(log).containsExactly("ask a", "ask b");
    b.answerNow();
    assertThat(log).as("not on the store's thread").containsExactly("ask a", "ask b");
    drain();
    assertThat(log).containsExactly("ask a", "ask b", "ask c");
    assertThat(thens).isEqualTo(1);
    r.release(Release.ENDED);
    assertThat(releases()).containsExactly("release c ENDED", "release b ENDED", "release a ENDED");
  }

  @Test
  void aFailedStoreAnswer_isTheSessions_andWhatWasHeldStillGoesBack() {
    CheckRun r = run(e("a", Answer.HOLD), e("b", Answer.FAIL), e("c", Answer.HOLD));
    r.run(Stage.ESTIMATE, 0, this::then);
    drain();
    assertThat(storeFailures).hasSize(1);
    assertThat(thens).isZero();
    r.release(Release.CANCELLED); // the front end ends the exchange
    assertThat(log).containsExactly("ask a", "ask b", "release a CANCELLED");
  }

  @Test
  void shadowPass_givesBackWhatItDoesNotKeep_nowAndTheRestAtItsEnd() {
    Fake kept = new Fake("kept", Stage.HEADERS, Answer.HOLD, true);
    CheckRun r = run(kept, e("a", Answer.HOLD), e("b", Answer.HOLD));
    r.run(Stage.HEADERS, 0, this::then);
    r.run(Stage.ESTIMATE, 0, this::then);
    r.pass(true);
    assertThat(releases()).containsExactly("release b PASSED", "release a PASSED");
    r.release(Release.ENDED); // the pass ended
    r.release(Release.ENDED);
    assertThat(releases())
        .containsExactly("release b PASSED", "release a PASSED", "release kept ENDED");
  }

  @Test
  void skipped_neverAsked_andNothingHeld() {
    CheckRun r = run(h("a", Answer.SKIP), e("b", Answer.SKIP), e("c", Answer.PASS));
    r.run(Stage.HEADERS, 0, this::then);
    r.run(Stage.ESTIMATE, 0, this::then);
    assertThat(log).containsExactly("ask c");
    assertThat(thens).isEqualTo(2);
    assertThat(r.held(AdmissionCheck.Held.class)).isNull();
    r.release(Release.ENDED);
    assertThat(releases()).isEmpty();
  }

  /**
   * A stage runs only its own checks, in its turn: the estimate run before the headers run asks
   * nothing, a stage with no check passes at once, and a run asked again after it ended asks
   * nothing more.
   */
  @Test
  void eachStagesRun_asksOnlyItsOwnChecks_inItsTurn() {
    CheckRun early = run(h("a", Answer.PASS), h("b", Answer.PASS), e("c", Answer.PASS));
    early.run(Stage.ESTIMATE, 0, this::then); // not its turn: the headers checks have not run
    assertThat(log).isEmpty();
    early.run(Stage.HEADERS, 0, this::then);
    early.run(Stage.HEADERS, 0, this::then); // ended: nothing more
    assertThat(log).containsExactly("ask a", "ask b");
    early.run(Stage.ESTIMATE, 0, this::then);
    early.run(Stage.ESTIMATE, 0, this::then);
    assertThat(log).containsExactly("ask a", "ask b", "ask c");
    assertThat(thens).isEqualTo(5);

    log.clear();
    CheckRun estimateOnly = run(e("d", Answer.PASS), e("f", Answer.PASS));
    estimateOnly.run(Stage.HEADERS, 0, this::then);
    assertThat(log).isEmpty();
    estimateOnly.run(Stage.ESTIMATE, 0, this::then);
    assertThat(log).containsExactly("ask d", "ask f");

    log.clear();
    CheckRun headersOnly = run(h("g", Answer.PASS));
    headersOnly.run(Stage.HEADERS, 0, this::then);
    headersOnly.run(Stage.ESTIMATE, 0, this::then);
    assertThat(log).containsExactly("ask g");

    CheckRun none = run();
    none.run(Stage.HEADERS, 0, this::then);
    none.run(Stage.ESTIMATE, 0, this::then);
    assertThat(log).containsExactly("ask g");
    assertThat(thens).isEqualTo(11);
  }

  @Test
  void eachChecksStage_readOnceWhenTheChainIsBuilt_notPerRequest() {
    Fake a = h("a", Answer.PASS);
    Fake b = e("b", Answer.SKIP);
    Fake c = e("c", Answer.PASS);
    CheckChain chain = new CheckChain(List.of(a, b, c));
    int built = a.stageReads + b.stageReads + c.stageReads;
    for (int i = 0; i < 3; i++) {
      CheckRun r = runOn(chain);
      r.run(Stage.HEADERS, 0, this::then);
      r.run(Stage.ESTIMATE, 0, this::then);
      r.release(Release.ENDED);
    }
    assertThat(log).containsExactly("ask a", "ask c", "ask a", "ask c", "ask a", "ask c");
    assertThat(thens).isEqualTo(6);
    assertThat(a.stageReads + b.stageReads + c.stageReads)
        .as("stage() calls after three requests, beyond the chain's own")
        .isEqualTo(built);
  }

  @Test
  void skippedChecks_allocateNothingPerRequest() {
    var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    assumeTrue(mx.isThreadAllocatedMemorySupported() && mx.isThreadAllocatedMemoryEnabled());
    int n = 20_000;
    long skipped =
        allocatedByRuns(mx, n, h("a", Answer.SKIP), h("b", Answer.SKIP), e("c", Answer.SKIP));
    assertThat(skipped).as("bytes for %d requests whose checks all skip", n).isLessThan(n);
    long held = allocatedByRuns(mx, n, h("a", Answer.HOLD)); // the measure sees allocation
    assertThat(held).as("bytes for %d requests holding one check", n).isGreaterThan(n * 16L);
  }

  private long allocatedByRuns(
      com.sun.management.ThreadMXBean mx, int n, AdmissionCheck<?>... checks) {
    CheckChain chain = new CheckChain(List.of(checks));
    CheckRun[] runs = new CheckRun[n];
    for (int i = 0; i < n; i++) {
      runs[i] =
          new CheckRun(chain, REQUEST, Runnable::run, SessionSteps.NONE) {
            @Override
            void refused(AdmissionCheck.Refusal r, long receivedNanos) {}

            @Override
            void storeFailed(Throwable cause) {}
          };
    }
    Runnable then = this::then;
    log.clear();
    long tid = Thread.currentThread().getId();
    long before = mx.getThreadAllocatedBytes(tid);
    for (CheckRun r : runs) {
      r.run(Stage.HEADERS, 0, then);
      r.run(Stage.ESTIMATE, 0, then);
      r.release(Release.ENDED);
    }
    long allocated = mx.getThreadAllocatedBytes(tid) - before;
    log.clear();
    return allocated;
  }

  @Test
  void aHeadersCheckAfterAnEstimateCheck_isNoChain() {
    assertThatThrownBy(() -> run(e("a", Answer.PASS), h("b", Answer.PASS)))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theSnapshotsChain_inOrder_leavesOutWhatIsOff() {
    Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);
    TenantQuotas quotas =
        new TenantQuotas(
            new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
            "t_",
            TenantQuotas.FailureMode.OPEN);
    AdmissionController controller = OneSlotPool.controller();
    WorkflowBudget workflows = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
    SessionListener none = e -> {};

    CheckChain off =
        CheckChain.of(
            quotas,
            clock,
            none,
            controller,
            TenantCaps.none(),
            SharedWorkflowBudget.local(workflows),
            List.of(
                new AdmissionCheck.Contributed(
                    RetryAttemptCheck.ORDER, RetryAttemptCheck.factory(RetryControl.off()))));
    assertThat(off.checks())
        .extracting(c -> c.getClass().getSimpleName())
        .containsExactly("TenantRateCheck", "TokenReservationCheck", "WorkflowPlaceCheck");

    TenantCaps caps =
        new TenantCaps(new AdmissionSessionTenantSlotTest.FakeSlots(), "t_", "me", () -> 10_000);
    RetryControl retries =
        new RetryControl(
            RetryPolicy.DEFAULTS,
            new InMemoryAttemptStore(new FakeTicker(), 100),
            "t_",
            true,
            System::nanoTime);
    CheckChain all =
        CheckChain.of(
            quotas,
            clock,
            none,
            controller,
            caps,
            SharedWorkflowBudget.local(workflows),
            List.of(
                new AdmissionCheck.Contributed(
                    RetryAttemptCheck.ORDER, RetryAttemptCheck.factory(retries))));
    assertThat(all.checks())
        .extracting(c -> c.getClass().getSimpleName() + ":" + c.stage())
        .containsExactly(
            "TenantRateCheck:HEADERS",
            "RetryAttemptCheck:HEADERS",
            "TokenReservationCheck:ESTIMATE",
            "TenantSlotCheck:ESTIMATE",
            "WorkflowPlaceCheck:ESTIMATE");
  }

  /** A check whose hold notes {@code note} of the request. */
  private static AdmissionCheck<String> noting(Stage stage, Object note) {
    return new AdmissionCheck<>() {
      @Override
      public Stage stage() {
        return stage;
      }

      @Override
      public boolean applies(Request r) {
        return true;
      }

      @Override
      public CompletionStage<String> ask(Request r) {
        return CompletableFuture.completedFuture("ok");
      }

      @Override
      public Verdict answered(String a, Request r) {
        return new Held() {
          @Override
          public Object note() {
            return note;
          }

          @Override
          protected void release(Release how) {}
        };
      }
    };
  }

  @Test
  void notes_readBetweenStages_includeEveryHoldTakenSince() {
    CheckRun r =
        run(
            noting(Stage.HEADERS, "at headers"),
            h("plain", Answer.HOLD),
            noting(Stage.ESTIMATE, 42));
    assertThat(r.notes()).isSameAs(CheckNotes.NONE);
    r.run(Stage.HEADERS, 0, this::then);
    CheckNotes atHeaders = r.notes();
    assertThat(atHeaders.get(String.class)).isEqualTo("at headers");
    assertThat(atHeaders.get(Integer.class)).isNull();
    assertThat(r.notes()).isSameAs(atHeaders); // read again, no hold since: the same notes
    r.run(Stage.ESTIMATE, 0, this::then);
    CheckNotes both = r.notes();
    assertThat(both.get(String.class)).isEqualTo("at headers");
    assertThat(both.get(Integer.class)).isEqualTo(42);
    r.release(Release.ENDED); // given back: what they noted stays the request's
    assertThat(r.notes().get(Integer.class)).isEqualTo(42);
    assertThat(thens).isEqualTo(2);
  }
}
