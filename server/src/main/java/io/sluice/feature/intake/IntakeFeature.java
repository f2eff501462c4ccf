package io.sluice.feature.intake;

import io.sluice.config.IntakeSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.intake.DispatchCheck;
import io.sluice.core.intake.DispatchStart;
import io.sluice.core.intake.Intake;
import io.sluice.core.intake.IntakeCheck;
import io.sluice.core.intake.IntakePolicy;
import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.LateIntake;
import io.sluice.core.intake.OperationCheck;
import io.sluice.core.time.Ticker;
import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.feature.StorePort;
import io.sluice.observability.IntakeMetrics;
import io.sluice.observability.IntakeRecorder;
import io.sluice.store.memory.InMemoryJobStore;
import io.sluice.store.redis.RedisConnection;
import io.sluice.store.redis.RedisJobStore;
import java.util.List;

/**
 * Background intake (docs/intake.md), registered in one place: its section ({@link IntakeSection},
 * {@code intake}), its store port ({@link #JOBS}: in memory, bounded by {@code intake.maxJobs}; on
 * Redis, Streams shared across replicas, a failed enqueue's late write undone under {@code
 * intake}), its checks ({@link OperationCheck} at the headers, answering the operation routes;
 * {@link IntakeCheck} with the estimate, accepting background requests; {@link DispatchCheck}
 * before them, telling a dispatched job by its signed marker), all in the chain only while {@code
 * intake.enabled}, its planner ({@link LateIntake}: a request of a class {@code intake.whenLate}
 * accepts, refused for lack of room in time, taken in instead; {@link DispatchStart}: a dispatched
 * job reads {@code in_progress} once its pool admitted it), and its listener and decision-record
 * part ({@link IntakeRecorder} on the process's {@link IntakeMetrics}). Keys live under {@code
 * quotas.keyPrefix}.
 */
public final class IntakeFeature implements Feature {
  /** The jobs' durable queue: shared exactly when the backend is. */
  public static final StorePort<JobStore> JOBS =
      new StorePort<>() {
        @Override
        public String name() {
          return "intake";
        }

        @Override
        public JobStore memory(Ticker ticker, boolean isolated) {
          return new InMemoryJobStore(isolated ? 1_000 : IntakePolicy.DEFAULTS.maxJobs());
        }

        @Override
        public JobStore redis(RedisConnection redis) {
          return new RedisJobStore(redis);
        }

        @Override
        public String lateWriteStore() {
          return RedisJobStore.STORE;
        }

        @Override
        public void configure(JobStore port, SluiceConfig config) {
          if (port instanceof InMemoryJobStore m) { // Redis keeps what its keys' TTLs say
            m.resize(config.section(IntakeSection.SECTION).maxJobs());
          }
        }
      };

  /** The start window's slack: how often a replica looks for room to start a waiting job. */
  public static final long DISPATCH_INTERVAL_MILLIS = 1_000;

  @Override
  public List<StorePort<?>> storePorts() {
    return List.of(JOBS);
  }

  @Override
  public void contribute(FeatureSnapshot s, Contributions out) {
    SluiceConfig config = s.config();
    Intake intake =
        new Intake(
            config.section(IntakeSection.SECTION),
            s.stores().port(JOBS),
            config.quotas().keyPrefix(),
            s.clock(),
            s.ticker(),
            DISPATCH_INTERVAL_MILLIS);
    out.check(
        DispatchCheck.ORDER,
        DispatchCheck.factory(intake, Dispatcher.marker(intake.policy().dispatch(), s.env())));
    out.check(OperationCheck.ORDER, OperationCheck.factory(intake));
    out.check(IntakeCheck.ORDER, IntakeCheck.factory(intake));
    out.planner(LateIntake.factory(intake));
    out.planner(DispatchStart.factory(intake));
    IntakeRecorder recorder =
        new IntakeRecorder(s.metrics().part(IntakeMetrics.class, IntakeMetrics::new));
    out.listener(recorder).recordPart(recorder);
  }
}
