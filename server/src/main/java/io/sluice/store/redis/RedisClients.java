package io.sluice.store.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Builds the Lettuce client for the deployment type; hides single/sentinel vs cluster.
 *
 * <p>Reconnects back off exponentially up to {@link RedisSettings#reconnectInterval()} (Lettuce's
 * own cap is 30 s, so a node that came back, or a Sentinel-promoted master, could wait half a
 * minute for the next attempt). In Cluster mode the slot map is refreshed on Lettuce's adaptive
 * triggers (MOVED/ASK, 3 reconnect attempts to a node, an uncovered slot, an unknown node) at most
 * once per reconnect interval (Lettuce: once per 5 s), and every {@link #PERIODIC_REFRESH}
 * (Lettuce: never): the slots of a killed master stay routed to it until a refresh after its
 * replica took over, and with Lettuce's defaults that refresh came only with a reconnect attempt
 * far into the backoff (6.5 s after the promotion in {@code RedisClusterTest}).
 */
final class RedisClients {
  static final Duration PERIODIC_REFRESH = Duration.ofSeconds(30);

  private final ClientResources resources;
  private final @Nullable RedisClient single; // exactly one of single and cluster is set
  private final @Nullable RedisClusterClient cluster;
  private final List<RedisURI> uris;

  RedisClients(RedisSettings s) {
    this.uris = uris(s);
    Duration maxDelay =
        s.reconnectInterval().compareTo(Duration.ofMillis(10)) < 0
            ? Duration.ofMillis(10)
            : s.reconnectInterval();
    this.resources =
        ClientResources.builder()
            .reconnectDelay(Delay.exponential(Duration.ZERO, maxDelay, 2, TimeUnit.MILLISECONDS))
            .build();
    TimeoutOptions timeouts = TimeoutOptions.enabled(s.commandTimeout());
    SocketOptions socket = SocketOptions.builder().connectTimeout(s.connectTimeout()).build();
    if (s.type().equals("cluster")) {
      this.single = null;
      this.cluster = RedisClusterClient.create(resources, uris);
      cluster.setOptions(
          ClusterClientOptions.builder()
              .timeoutOptions(timeouts)
              .socketOptions(socket)
              .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
              .autoReconnect(true)
              .topologyRefreshOptions(
                  ClusterTopologyRefreshOptions.builder()
                      // every adaptive trigger is on by default since Lettuce 7
                      .adaptiveRefreshTriggersTimeout(maxDelay)
                      .refreshTriggersReconnectAttempts(3)
                      .enablePeriodicRefresh(PERIODIC_REFRESH)
                      .build())
              .build());
    } else {
      this.cluster = null;
      this.single = RedisClient.create(resources);
      single.setOptions(
          ClientOptions.builder()
              .timeoutOptions(timeouts)
              .socketOptions(socket)
              .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
              .autoReconnect(true)
              .build());
    }
  }

  CompletableFuture<StatefulConnection<String, String>> connect() {
    RedisClusterClient cl = cluster;
    if (cl != null) {
      // Lettuce's async cluster connect needs the partitions (slot map) loaded first; without
      // this it fails every time with "Partitions not initialized"
      return cl.refreshPartitionsAsync()
          .toCompletableFuture()
          .thenCompose(v -> cl.connectAsync(StringCodec.UTF8))
          .thenApply(c -> (StatefulConnection<String, String>) c);
    }
    return Objects.requireNonNull(single, "single")
        .connectAsync(StringCodec.UTF8, uris.get(0))
        .toCompletableFuture()
        .thenApply(c -> (StatefulConnection<String, String>) c);
  }

  @SuppressWarnings("unchecked")
  RedisClusterAsyncCommands<String, String> commands(StatefulConnection<String, String> conn) {
    if (conn instanceof io.lettuce.core.cluster.api.StatefulRedisClusterConnection<?, ?> cc) {
      return (RedisClusterAsyncCommands<String, String>) cc.async();
    }
    return ((io.lettuce.core.api.StatefulRedisConnection<String, String>) conn).async();
  }

  void shutdown() {
    if (cluster != null) {
      cluster.shutdown();
    } else {
      Objects.requireNonNull(single, "single").shutdown();
    }
    // ours (not Lettuce's default), so the client does not close it; its threads are daemons
    var unused = resources.shutdown(0, 2, TimeUnit.SECONDS);
  }

  @SuppressWarnings("StringSplitter") // trailing empty entries dropped: a trailing comma is fine
  private static List<RedisURI> uris(RedisSettings s) {
    List<RedisURI> out = new ArrayList<>();
    String[] parts = s.url().split(",");
    switch (s.type()) {
      case "sentinel" -> {
        if (parts.length < 2) {
          throw new IllegalArgumentException(
              "REDIS_URL: " + s.url() + " (expected: mastername,host:port[,host:port...])");
        }
        boolean auth = !s.sentinelAuth().isEmpty();
        HostPort first = HostPort.parse(parts[1]);
        RedisURI.Builder b =
            auth
                ? RedisURI.Builder.sentinel(first.host(), first.port(), parts[0], s.sentinelAuth())
                : RedisURI.Builder.sentinel(first.host(), first.port(), parts[0]);
        for (int i = 2; i < parts.length; i++) {
          HostPort hp = HostPort.parse(parts[i]);
          if (auth) {
            b.withSentinel(hp.host(), hp.port(), s.sentinelAuth());
          } else {
            b.withSentinel(hp.host(), hp.port());
          }
        }
        out.add(finish(b, s));
      }
      case "cluster" -> {
        for (String p : parts) {
          HostPort hp = HostPort.parse(p);
          out.add(finish(RedisURI.Builder.redis(hp.host(), hp.port()), s));
        }
      }
      default -> {
        if (s.socketType().equals("unix")) {
          out.add(finish(RedisURI.Builder.socket(s.url()), s));
        } else {
          HostPort hp = HostPort.parse(s.url());
          out.add(finish(RedisURI.Builder.redis(hp.host(), hp.port()), s));
        }
      }
    }
    return out;
  }

  private static RedisURI finish(RedisURI.Builder b, RedisSettings s) {
    if (!s.auth().isEmpty()) {
      int colon = s.auth().indexOf(':');
      if (colon >= 0) {
        b.withAuthentication(s.auth().substring(0, colon), s.auth().substring(colon + 1));
      } else {
        b.withPassword(s.auth().toCharArray());
      }
    }
    b.withSsl(s.tls()).withVerifyPeer(!s.tlsSkipHostnameVerification());
    b.withTimeout(s.connectTimeout());
    return b.build();
  }

  private record HostPort(String host, int port) {
    static HostPort parse(String text) {
      String t = text.trim();
      int colon = t.lastIndexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException("REDIS_URL: " + text + " (expected: host:port)");
      }
      try {
        return new HostPort(t.substring(0, colon), Integer.parseInt(t.substring(colon + 1)));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("REDIS_URL: " + text + " (expected: host:port)");
      }
    }
  }
}
