package io.sluice;

import io.sluice.config.ConfigLoader;

/** Policies the JMH benchmarks start servers on. */
public final class JmhPolicies {
  private JmhPolicies() {}

  /** The embedded default policy, bound to loopback on free ports. */
  public static String embeddedDefaultOnLoopback() {
    return ConfigLoader.embeddedDefaultYaml()
        .replace("0.0.0.0", "127.0.0.1")
        .replace("port: 8081", "port: 0")
        .replace("port: 8080", "port: 0");
  }
}
