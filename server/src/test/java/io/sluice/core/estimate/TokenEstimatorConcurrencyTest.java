package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class TokenEstimatorConcurrencyTest {
  private static final String[] FIXTURES = {
    "openai-chat-simple.json",
    "openai-chat-tools.json",
    "openai-responses.json",
    "openai-completions.json",
    "anthropic-messages.json",
  };

  @Test
  void estimate_sharedInstanceManyThreads_sameResultsAsSingleThread() throws Exception {
    TokenEstimator estimator = TokenEstimator.uncached(EstimatorSettings.defaults());
    EstimateLimits limits = new EstimateLimits(100, 1000);
    List<byte[]> bodies = new ArrayList<>();
    List<TokenEstimate> expected = new ArrayList<>();
    for (String fixture : FIXTURES) {
      byte[] body = Fixtures.bytes(fixture);
      bodies.add(body);
      expected.add(estimator.estimate(RequestFormat.AUTO, body, limits));
    }
    int threads = 4;
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Integer>> mismatches = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int seed = t;
        mismatches.add(
            pool.submit(
                () -> {
                  start.await();
                  int wrong = 0;
                  for (int i = 0; i < 200; i++) {
                    int k = (i + seed) % bodies.size();
                    if (!estimator
                        .estimate(RequestFormat.AUTO, bodies.get(k), limits)
                        .equals(expected.get(k))) {
                      wrong++;
                    }
                  }
                  return wrong;
                }));
      }
      start.countDown();
      for (Future<Integer> f : mismatches) {
        assertThat(f.get(30, TimeUnit.SECONDS)).isZero();
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
