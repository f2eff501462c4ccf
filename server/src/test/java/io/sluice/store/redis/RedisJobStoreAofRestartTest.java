package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.intake.JobStatus;
import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.OperationIds;
import io.sluice.store.LocalRedis;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * No acknowledged job is lost when Redis restarts with AOF on (docs/intake.md, "Durability"): an
 * own redis-server ({@code --appendonly yes --appendfsync always}) on a free port takes N jobs, is
 * killed with SIGKILL (no chance to write anything more) and started again on the same directory
 * and port; every job whose enqueue was acknowledged is still there, waiting, in arrival order, and
 * each is claimed exactly once and completes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisJobStoreAofRestartTest {
  private static final int N = 40;
  private static final long FRESH = 3_600_000;
  private static final long KEEP = 3_600_000;

  @TempDir Path dir;
  @RegisterExtension final AofRedis redis = new AofRedis("always");

  @Test
  void killedWithAofAlways_everyAcknowledgedJobSurvives_andIsDispatchedOnce() throws Exception {
    JobStore before = new RedisJobStore(redis.start(dir));
    String prefix = LocalRedis.uniquePrefix();
    long now = System.currentTimeMillis();
    JobStore.Caps caps = new JobStore.Caps(1_000, 1_000_000, KEEP);
    List<String> acknowledged = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      String tenant = i % 2 == 0 ? "acme" : "globex";
      JobStore.NewJob job =
          new JobStore.NewJob(
              OperationIds.next(),
              tenant,
              "gpu",
              "batch",
              "responses",
              "m1",
              100,
              now + i,
              now + i + FRESH,
              ("{\"input\":\"job " + i + "\",\"background\":true}")
                  .getBytes(StandardCharsets.UTF_8));
      JobStore.Enqueued e = before.enqueue(prefix, job, caps).toCompletableFuture().join();
      assertThat(e.accepted()).isTrue();
      acknowledged.add(job.id()); // the store answered: the client would now hold this id
    }
    // SIGKILL: whatever was acknowledged is in the AOF (fsync before every reply)
    JobStore after = new RedisJobStore(redis.killAndRestart());

    for (int i = 0; i < N; i++) {
      String tenant = i % 2 == 0 ? "acme" : "globex";
      JobStore.JobView v =
          after
              .read(prefix, tenant, acknowledged.get(i), now + N, KEEP)
              .toCompletableFuture()
              .join();
      assertThat(v).as("job %d after the restart", i).isNotNull();
      assertThat(v.status()).isEqualTo(JobStatus.QUEUED);
      assertThat(v.position()).isEqualTo(i);
    }
    Set<String> claimed = new HashSet<>();
    List<String> order = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      JobStore.Claimed c =
          after
              .claim(prefix, "gpu", "replica-b", now + N + i, 60_000, KEEP)
              .toCompletableFuture()
              .join();
      assertThat(c).as("claim %d", i).isNotNull();
      assertThat(claimed.add(c.id())).as("claimed once: %s", c.id()).isTrue();
      order.add(c.id());
      assertThat(new String(c.body(), StandardCharsets.UTF_8)).contains("\"job " + i + "\"");
      assertThat(
              after
                  .complete(
                      prefix,
                      c.id(),
                      JobStatus.COMPLETED,
                      "{}".getBytes(StandardCharsets.UTF_8),
                      null,
                      now + N + i,
                      KEEP)
                  .toCompletableFuture()
                  .join())
          .isTrue();
    }
    assertThat(order).containsExactlyElementsOf(acknowledged);
    assertThat(
            after
                .claim(prefix, "gpu", "replica-b", now + 2 * N, 60_000, KEEP)
                .toCompletableFuture()
                .join())
        .isNull();
  }
}
