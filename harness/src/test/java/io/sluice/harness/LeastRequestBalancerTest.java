package io.sluice.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.Test;

/** Envoy's LEAST_REQUEST as the harness plays it: two choices, full scan, ejection, counting. */
class LeastRequestBalancerTest {

  /** A random source that answers the given draws in order (each must be below its bound). */
  static IntUnaryOperator draws(int... values) {
    int[] next = {0};
    return bound -> {
      int v = values[next[0]++];
      assertThat(v).isLessThan(bound);
      return v;
    };
  }

  @Test
  void pick_twoChoices_theOneWithFewerOpenRequestsOfTheTwoDrawn() {
    int[] open = {5, 1, 3};
    boolean[] up = {true, true, true};
    assertThat(LeastRequestBalancer.pick(open, up, 2, draws(0, 2))).isEqualTo(2);
    assertThat(LeastRequestBalancer.pick(open, up, 2, draws(2, 1))).isEqualTo(1);
    // drawn with replacement: the same backend twice is that backend, however busy
    assertThat(LeastRequestBalancer.pick(open, up, 2, draws(0, 0))).isZero();
  }

  @Test
  void pick_twoChoices_aTieKeepsTheFirstDrawn() {
    int[] open = {2, 2, 9};
    boolean[] up = {true, true, true};
    assertThat(LeastRequestBalancer.pick(open, up, 2, draws(1, 0))).isEqualTo(1);
    assertThat(LeastRequestBalancer.pick(open, up, 2, draws(0, 1))).isZero();
  }

  @Test
  void pick_fullScan_theMinimum_tiesBrokenByTheRandomSource() {
    int[] open = {4, 2, 7, 2};
    boolean[] up = {true, true, true, true};
    assertThat(LeastRequestBalancer.pick(open, up, 0, draws(0))).isEqualTo(1);
    assertThat(LeastRequestBalancer.pick(open, up, 0, draws(1))).isEqualTo(3);
    assertThat(LeastRequestBalancer.pick(new int[] {3, 0, 5}, up, 0, draws())).isEqualTo(1);
  }

  @Test
  void pick_ejectedBackendsAreNeverChosen_noneHealthyIsMinusOne() {
    int[] open = {0, 9, 9};
    boolean[] up = {false, true, true};
    Random rnd = new Random(1);
    for (int i = 0; i < 1000; i++) {
      assertThat(LeastRequestBalancer.pick(open, up, 2, rnd::nextInt)).isNotZero();
      assertThat(LeastRequestBalancer.pick(open, up, 0, rnd::nextInt)).isNotZero();
    }
    assertThat(LeastRequestBalancer.pick(open, new boolean[] {false, true, false}, 2, draws()))
        .isEqualTo(1);
    assertThat(LeastRequestBalancer.pick(open, new boolean[3], 2, draws())).isEqualTo(-1);
  }

  @Test
  void pick_twoChoices_neverTheBusiestOfThree_whenTheOthersDiffer() {
    // with three backends, two choices never pick the strict maximum unless drawn twice
    int[] open = {1, 2, 3};
    boolean[] up = {true, true, true};
    for (int a = 0; a < 3; a++) {
      for (int b = 0; b < 3; b++) {
        int picked = LeastRequestBalancer.pick(open, up, 2, draws(a, b));
        assertThat(picked).isEqualTo(open[a] <= open[b] ? a : b);
        if (a != 2 || b != 2) {
          assertThat(picked).isNotEqualTo(2);
        }
      }
    }
  }

  /** Backends that complete only when the test says so. */
  static final class Held {
    final List<List<CompletableFuture<HttpResult>>> pending = new ArrayList<>();

    List<Function<HttpRequest, CompletableFuture<HttpResult>>> backends(int n) {
      List<Function<HttpRequest, CompletableFuture<HttpResult>>> out = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        List<CompletableFuture<HttpResult>> mine = new ArrayList<>();
        pending.add(mine);
        out.add(
            r -> {
              CompletableFuture<HttpResult> f = new CompletableFuture<>();
              mine.add(f);
              return f;
            });
      }
      return out;
    }
  }

  @Test
  void sendAsync_fullScan_spreadsEvenly_andCountsOpenUntilTheResult() {
    Held held = new Held();
    LeastRequestBalancer lb = new LeastRequestBalancer(held.backends(3), 0);
    HttpRequest req = HttpRequest.builder().path("/").build();
    for (int i = 0; i < 9; i++) {
      var unused = lb.sendAsync(req);
    }
    for (int i = 0; i < 3; i++) {
      assertThat(lb.open(i)).isEqualTo(3);
      assertThat(lb.sent(i)).isEqualTo(3);
    }
    // backend 1 finishes its three: the next three go there
    held.pending.get(1).forEach(f -> f.complete(null));
    assertThat(lb.open(1)).isZero();
    for (int i = 0; i < 3; i++) {
      var unused = lb.sendAsync(req);
    }
    assertThat(lb.sent(1)).isEqualTo(6);
    assertThat(lb.open(1)).isEqualTo(3);
  }

  @Test
  void sendAsync_ejected_noNewRequests_restoreBringsItBack_noneHealthyIs503() {
    Held held = new Held();
    LeastRequestBalancer lb = new LeastRequestBalancer(held.backends(2), 0);
    HttpRequest req = HttpRequest.builder().path("/").build();
    lb.eject(0);
    for (int i = 0; i < 20; i++) {
      var unused = lb.sendAsync(req);
    }
    assertThat(lb.sent(0)).isZero();
    assertThat(lb.sent(1)).isEqualTo(20);
    lb.restore(0);
    var unused = lb.sendAsync(req);
    assertThat(lb.sent(0)).isEqualTo(1); // the least loaded: 1 has 20 open
    lb.eject(0);
    lb.eject(1);
    HttpResult r = lb.sendAsync(req).join();
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.responseCodeDetails()).isEqualTo("no_healthy_upstream");
  }

  @Test
  void constructor_rejectsNoBackendsAndNegativeChoices() {
    assertThatThrownBy(() -> new LeastRequestBalancer(List.of(), 2))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new LeastRequestBalancer(new Held().backends(1), -1))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
