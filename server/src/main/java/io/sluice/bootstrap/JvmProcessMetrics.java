package io.sluice.bootstrap;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.sluice.observability.MetricHelp;
import io.sluice.observability.MetricNames;

/**
 * The standard JVM and process meters (docs/metrics.md, "JVM and process"): memory pools and
 * buffers, GC pauses and allocation, threads by state, class loading, CPU and load, uptime and
 * start time, open and maximum file descriptors; plus {@code sluice_build_info{version,commit}}.
 * CPU time is {@code process_cpu_seconds_total} (Prometheus' own name; {@link MetricHelp} drops
 * Micrometer's {@code process_cpu_time_ns_total}).
 */
final class JvmProcessMetrics {
  private JvmProcessMetrics() {}

  /** Binds them all; closing the result stops the GC listener. */
  static AutoCloseable bindTo(MeterRegistry registry) {
    new JvmMemoryMetrics().bindTo(registry);
    JvmGcMetrics gc = new JvmGcMetrics();
    gc.bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ClassLoaderMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry); // its process.cpu.time is replaced (MetricHelp)
    java.lang.management.OperatingSystemMXBean os =
        java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean sun
        && sun.getProcessCpuTime() >= 0) {
      FunctionCounter.builder(
              MetricHelp.PROCESS_CPU, sun, b -> b.getProcessCpuTime() / 1_000_000_000.0)
          .baseUnit("seconds")
          .description("CPU time used by the Java virtual machine process")
          .register(registry);
    }
    new UptimeMetrics().bindTo(registry);
    new FileDescriptorMetrics().bindTo(registry);
    Gauge.builder(MetricNames.BUILD_INFO, () -> 1)
        .tag("version", Main.version())
        .tag("commit", Main.commit())
        .description("1, labelled with the version and the git commit this process was built from")
        .register(registry);
    return gc;
  }
}
