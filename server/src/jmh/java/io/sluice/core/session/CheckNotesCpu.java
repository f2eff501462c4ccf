package io.sluice.core.session;

import io.sluice.core.estimate.TokenEstimate;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The CPU time of one request's check run as an LLM-shaped stream drives it, on its own thread in a
 * plain loop: three checks (two holds at the headers, one noting the attempt; one at the estimate),
 * the notes read three times (the admitted and released events' facts, and the decision record),
 * then the holds given back. For comparing two jars run alternately.
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.core.session.CheckNotesCpu
 * </pre>
 */
public final class CheckNotesCpu {
  private CheckNotesCpu() {}

  private static final class Noting extends AdmissionCheck.Held {
    private final Object note;

    Noting(Object note) {
      this.note = note;
    }

    @Override
    public Object note() {
      return note;
    }

    @Override
    protected void release(AdmissionCheck.Release how) {}
  }

  private static final class Plain extends AdmissionCheck.Held {
    @Override
    protected void release(AdmissionCheck.Release how) {}
  }

  private static final class Other extends AdmissionCheck.Held {
    @Override
    protected void release(AdmissionCheck.Release how) {}
  }

  private static AdmissionCheck<String> check(
      AdmissionCheck.Stage stage, Supplier<AdmissionCheck.Held> hold) {
    CompletableFuture<String> ok = CompletableFuture.completedFuture("ok");
    return new AdmissionCheck<>() {
      @Override
      public AdmissionCheck.Stage stage() {
        return stage;
      }

      @Override
      public boolean applies(AdmissionCheck.Request r) {
        return true;
      }

      @Override
      public CompletionStage<String> ask(AdmissionCheck.Request r) {
        return ok;
      }

      @Override
      public AdmissionCheck.Verdict answered(String a, AdmissionCheck.Request r) {
        return hold.get();
      }
    };
  }

  public static void main(String[] args) {
    Object attempt = "attempt";
    CheckChain chain =
        new CheckChain(
            List.of(
                check(AdmissionCheck.Stage.HEADERS, Plain::new),
                check(AdmissionCheck.Stage.HEADERS, () -> new Noting(attempt)),
                check(AdmissionCheck.Stage.ESTIMATE, Other::new)));
    AdmissionCheck.Request request =
        new AdmissionCheck.Request() {
          @Override
          public Subject subject() {
            throw new UnsupportedOperationException("not read by these checks");
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
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    StringBuilder out = new StringBuilder("cpu ns/op (5 x 1M):");
    long sink = 0;
    for (int k = -3; k < 5; k++) { // three rounds to warm up
      long before = mx.getCurrentThreadCpuTime();
      for (int i = 0; i < 1_000_000; i++) {
        sink += once(chain, request);
      }
      if (k >= 0) {
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 1_000_000);
      }
    }
    System.out.println(out + " (" + (sink & 1) + ")");
  }

  private static int once(CheckChain chain, AdmissionCheck.Request request) {
    CheckRun r =
        new CheckRun(chain, request, Runnable::run, SessionSteps.NONE) {
          @Override
          void refused(AdmissionCheck.Refusal x, long receivedNanos) {}

          @Override
          void storeFailed(Throwable cause) {}
        };
    r.run(AdmissionCheck.Stage.HEADERS, 0, () -> {});
    r.run(AdmissionCheck.Stage.ESTIMATE, 0, () -> {});
    int n = r.notes().hashCode() + r.notes().hashCode() + r.notes().hashCode();
    r.release(AdmissionCheck.Release.ENDED);
    return n;
  }
}
