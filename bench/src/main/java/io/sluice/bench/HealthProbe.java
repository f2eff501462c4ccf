package io.sluice.bench;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/** Polls gRPC health and {@code /healthz} every 250 ms with a 1 s timeout. */
final class HealthProbe {
  final ManagedChannel ch;
  final HttpClient http;
  final String url;
  final AtomicBoolean running = new AtomicBoolean(true);
  long grpcOk;
  long grpcTotal;
  long httpOk;
  long httpTotal;
  long grpcMaxMillis;
  long httpMaxMillis;
  @Nullable Thread thread;

  HealthProbe(ManagedChannel ch, HttpClient http, String url) {
    this.ch = ch;
    this.http = http;
    this.url = url;
  }

  void start() {
    thread =
        new Thread(
            () -> {
              while (running.get()) {
                long t0 = System.nanoTime();
                try {
                  HealthCheckResponse r =
                      HealthGrpc.newBlockingStub(ch)
                          .withDeadlineAfter(1, TimeUnit.SECONDS)
                          .check(HealthCheckRequest.newBuilder().setService("").build());
                  if (r.getStatus() == HealthCheckResponse.ServingStatus.SERVING) {
                    grpcOk++;
                  }
                } catch (RuntimeException e) {
                  // counted as not answered
                }
                grpcMaxMillis = Math.max(grpcMaxMillis, (System.nanoTime() - t0) / 1_000_000);
                grpcTotal++;
                long t1 = System.nanoTime();
                try {
                  HttpResponse<String> r =
                      http.send(
                          HttpRequest.newBuilder(URI.create(url))
                              .timeout(Duration.ofSeconds(1))
                              .GET()
                              .build(),
                          HttpResponse.BodyHandlers.ofString());
                  if (r.statusCode() == 200) {
                    httpOk++;
                  }
                } catch (IOException e) {
                  // not answered
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
                httpMaxMillis = Math.max(httpMaxMillis, (System.nanoTime() - t1) / 1_000_000);
                httpTotal++;
                try {
                  Thread.sleep(250);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "flood-health");
    thread.setDaemon(true);
    thread.start();
  }

  void stop() throws InterruptedException {
    running.set(false);
    Thread t = thread;
    if (t != null) {
      t.join(5000);
    }
  }

  String grpc() {
    return grpcOk + "/" + grpcTotal + " (max " + grpcMaxMillis + " ms)";
  }

  String http() {
    return httpOk + "/" + httpTotal + " (max " + httpMaxMillis + " ms)";
  }
}
