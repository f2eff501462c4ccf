package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.queue.LogQuantile;
import io.sluice.core.queue.ServiceModel;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * What the learning parts read, bit for bit, against the values of the code before their cuts (the
 * reserve's logarithms computed once per answer, a tail's exp() at its first read): seeded
 * sequences of answers (complete and cut, several tenants, keys and caps) and of tail samples are
 * run through {@link OutputReserves}, {@link LogQuantile} and {@link ServiceModel}, every value
 * they give at every read folded into a checksum of the doubles' bits. The expected sums were
 * computed by this same class compiled against the parent commit's classes ({@code main} of
 * 2026-12-06, {@code ee4f876}; {@code MODEL_EDGES} against {@code f11960c}, before the service
 * model's fit was written out per size): {@code java -cp ...
 * io.sluice.core.estimate.LearningGoldenTest}.
 */
class LearningGoldenTest {
  private static final long RESERVES = -8451478019390690585L;
  private static final long TAILS = -2824781366071932990L;
  private static final long MODEL = 5438451408982270953L;
  private static final long MODEL_EDGES = 2189884729449089934L;
  private static final long MANY_TENANTS = -5515725790194497270L;

  @Test
  void reservesReadWhatTheyReadBefore() {
    assertThat(reserves(20261206)).isEqualTo(RESERVES);
  }

  @Test
  void tailsReadWhatTheyReadBefore() {
    assertThat(tails(20261206)).isEqualTo(TAILS);
  }

  @Test
  void serviceModelReadsWhatItReadBefore() {
    assertThat(model(20261206)).isEqualTo(MODEL);
  }

  /**
   * The service model's fit written out per size (no loop over a matrix) against the loop's values:
   * samples that cannot separate some terms, a term that never varies, sums that overflow, tiny and
   * huge times, each read after every sample.
   */
  @Test
  void serviceModelReadsWhatItReadBeforeAtTheEdges() {
    assertThat(modelEdges(20261206)).isEqualTo(MODEL_EDGES);
  }

  /**
   * A coarse key weighing more tenants than it keeps ({@link OutputReserves#MAX_TENANTS_PER_KEY}):
   * which tenant is forgotten, and the weight each returning one starts again from, against the
   * values of the boxed weights before ({@code main} of 2026-12-07, {@code c9682cd9}).
   */
  @Test
  void reservesOfManyTenantsReadWhatTheyReadBefore() {
    assertThat(manyTenants(20261207)).isEqualTo(MANY_TENANTS);
  }

  public static void main(String[] args) {
    System.out.println("MANY_TENANTS = " + manyTenants(20261207) + "L");
    System.out.println("RESERVES = " + reserves(20261206) + "L");
    System.out.println("TAILS = " + tails(20261206) + "L");
    System.out.println("MODEL = " + model(20261206) + "L");
    System.out.println("MODEL_EDGES = " + modelEdges(20261206) + "L");
  }

  private static long fold(long sum, double v) {
    return sum * 31 + Double.doubleToLongBits(v);
  }

  static long reserves(long seed) {
    Random r = new Random(seed);
    long sum = 0;
    for (int run = 0; run < 6; run++) {
      OutputReserves.Settings s =
          OutputReserves.Settings.builder()
              .warmup(1 + r.nextInt(6))
              .halfLife(1 + r.nextInt(300))
              .tenantKeys(run % 3 != 2)
              .poolPrior(run % 2 == 0)
              .confidence(0.5 + r.nextDouble() * 0.49)
              .build();
      OutputReserves reserves = new OutputReserves(s);
      String[] tenants = {"acme", "globex", "initech"};
      String[] scopes = {"chat", "class:batch"};
      double centre = Math.exp(r.nextDouble() * 8);
      for (int i = 0; i < 1_500; i++) {
        String tenant = tenants[r.nextInt(i % 400 < 200 ? 1 : 3)];
        String scope = scopes[r.nextInt(2)];
        double q = r.nextInt(3) == 0 ? 0.5 : 0.9;
        long cap = r.nextInt(10) == 0 ? 1 + r.nextInt(50) : 256 + r.nextInt(4096);
        int answers = 1 + (r.nextInt(8) == 0 ? r.nextInt(3) : 0);
        OutputReserves.Reserve got =
            reserves.reserve("p", "m", scope, tenant, q, cap, 512, answers, cap * answers);
        sum = fold(sum, got.outputTokens());
        sum = fold(sum, got.rule().hashCode());
        long out =
            switch (r.nextInt(12)) {
              case 0 -> 0;
              case 1 -> r.nextInt(2);
              case 2 -> (long) (cap * answers * (1 + r.nextDouble()));
              default -> (long) (answers * centre * Math.exp(r.nextGaussian() * 0.4));
            };
        if (r.nextInt(6) == 0) {
          reserves.recordCut("p", "m", scope, tenant, q, cap, answers, out);
        } else {
          reserves.record("p", "m", scope, tenant, q, cap, answers, out);
        }
        if (i % 97 == 0) {
          for (OutputReserves.KeyView v : reserves.top(10)) {
            sum = fold(sum, v.samples());
            sum = fold(sum, v.uses());
            sum = fold(sum, v.absolute());
            sum = fold(sum, v.relative());
            sum = fold(sum, v.lossAbsolute());
            sum = fold(sum, v.lossRelative());
            sum = fold(sum, v.effectiveSamples());
            sum = fold(sum, v.absoluteBound());
            sum = fold(sum, v.form().hashCode());
            sum = fold(sum, v.tenantsWeighed());
          }
        }
      }
      for (ReserveSnapshot snap : reserves.takeAdditions()) {
        for (var e : new java.util.TreeMap<>(snap.fields()).entrySet()) {
          sum = fold(sum, e.getKey().hashCode());
          sum = fold(sum, e.getValue());
        }
      }
    }
    return sum;
  }

  static long tails(long seed) {
    Random r = new Random(seed);
    long sum = 0;
    for (int run = 0; run < 20; run++) {
      LogQuantile t =
          new LogQuantile(run % 2 == 0 ? 0.9 : 0.5, 0.05 + r.nextDouble() * 0.2, 1 + r.nextInt(25));
      for (int i = 0; i < 2_000; i++) {
        double x = Math.exp(r.nextGaussian() + run * 0.1);
        switch (r.nextInt(10)) {
          case 0 -> t.onAtLeast(x * 2);
          case 1 -> t.onSample(r.nextInt(20) == 0 ? -x : x);
          default -> t.onSample(x);
        }
        if (r.nextInt(run % 4 + 1) == 0) { // read often, rarely, or not between samples
          sum = fold(sum, t.value());
        }
      }
      sum = fold(sum, t.value());
    }
    return sum;
  }

  static long model(long seed) {
    Random r = new Random(seed);
    long sum = 0;
    for (int run = 0; run < 10; run++) {
      ServiceModel m = new ServiceModel(1 + r.nextInt(300), 1 + r.nextInt(30));
      boolean sameShape = run % 3 == 0;
      for (int i = 0; i < 1_000; i++) {
        long in = sameShape ? 480 : 1 + r.nextInt(4000);
        long out = sameShape ? 1024 : r.nextInt(2000);
        long nanos = (long) (1e6 + 2e3 * in * (run % 2) + 2e4 * out + 1e5 * r.nextGaussian());
        m.onSample(in, out, nanos);
        if (r.nextInt(run % 3 + 1) == 0) {
          sum = fold(sum, m.ready() ? 1 : 0);
          sum = fold(sum, m.fixedNanos());
          sum = fold(sum, m.nanosPerInputToken());
          sum = fold(sum, m.nanosPerOutputToken());
          sum = fold(sum, m.predictWithinEvidenceNanos(in * 3, out));
        }
      }
    }
    return sum;
  }

  static long modelEdges(long seed) {
    Random r = new Random(seed);
    long sum = 0;
    for (int run = 0; run < 64; run++) {
      ServiceModel m = new ServiceModel(1 + r.nextInt(50), 1 + r.nextInt(5));
      int shape = run % 8;
      for (int i = 0; i < 300; i++) {
        long in =
            switch (shape) {
              case 0, 1 -> 480; // input never varies
              case 2 -> 0; // no input
              case 3 -> r.nextInt(3); // almost none
              case 4 -> (long) 1e15 + r.nextInt(1000); // sums overflow
              default -> 1 + r.nextInt(1 << (1 + r.nextInt(20)));
            };
        long out =
            switch (shape) {
              case 0 -> 1024; // neither varies
              case 2 -> 1 + r.nextInt(2000);
              case 5 -> 0; // no output
              case 6 -> in; // output a copy of input: the terms cannot be told apart
              default -> r.nextInt(1 << (1 + r.nextInt(12)));
            };
        long nanos =
            switch (r.nextInt(6)) {
              case 0 -> 1 + r.nextInt(3); // tiny
              case 1 -> Long.MAX_VALUE / (1 + r.nextInt(4)); // huge
              case 2 -> (long) (5e5 + 3e3 * in + 2e4 * out); // exact
              default -> (long) (1e6 + 2e3 * in * (run % 2) + 2e4 * out + 1e6 * r.nextGaussian());
            };
        m.onSample(in, out, nanos);
        sum = fold(sum, m.ready() ? 1 : 0);
        sum = fold(sum, m.fixedNanos());
        sum = fold(sum, m.nanosPerInputToken());
        sum = fold(sum, m.nanosPerOutputToken());
      }
    }
    return sum;
  }

  static long manyTenants(long seed) {
    Random r = new Random(seed);
    long sum = 0;
    for (int run = 0; run < 3; run++) {
      OutputReserves reserves =
          new OutputReserves(
              OutputReserves.Settings.builder().warmup(2 + run).halfLife(50 + 100 * run).build());
      for (int i = 0; i < 6_000; i++) {
        // one tenant sends most answers (its weight held at its lead), many others rarely: the
        // weights forgotten differ, and a tenant forgotten starts again from nothing
        int t = r.nextInt(10) < 6 ? 0 : 1 + (int) Math.min(198, Math.abs(r.nextGaussian()) * 90);
        String tenant = "t" + t;
        long out = (long) ((60 + t) * Math.exp(r.nextGaussian() * 0.3));
        if (r.nextInt(8) == 0) {
          reserves.recordCut("p", "m", "chat", tenant, 0.9, 2048, 1, out);
        } else {
          reserves.record("p", "m", "chat", tenant, 0.9, 2048, 1, out);
        }
        if (i % 53 == 0) {
          sum =
              fold(
                  sum,
                  reserves
                      .reserve("p", "m", "chat", "new" + i, 0.9, 2048, 512, 1, 2048)
                      .outputTokens());
          for (OutputReserves.KeyView v : reserves.top(1000)) {
            if (v.tenant().isEmpty()) {
              sum = fold(sum, v.samples());
              sum = fold(sum, v.absolute());
              sum = fold(sum, v.effectiveSamples());
              sum = fold(sum, v.absoluteBound());
              sum = fold(sum, v.tenantsWeighed());
            }
          }
        }
      }
    }
    return sum;
  }
}
