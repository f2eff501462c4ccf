package io.sluice.bench;

import java.net.http.HttpClient;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/** Heap used (without forcing GC) every 500 ms: the peak during the flood. */
final class HeapSampler {
  final HttpClient http;
  final String url;
  final AtomicBoolean running = new AtomicBoolean(true);
  volatile double peak;
  @Nullable Thread thread;

  HeapSampler(HttpClient http, String url) {
    this.http = http;
    this.url = url;
  }

  void start() {
    thread =
        new Thread(
            () -> {
              while (running.get()) {
                try {
                  double used =
                      HeapPerQueuedItem.sum(
                          Flood.get(http, url),
                          "jvm_memory_used_bytes\\{area=\"heap\"[^}]*\\} ([0-9.eE+-]+)");
                  peak = Math.max(peak, used);
                  Thread.sleep(500);
                } catch (InterruptedException e) {
                  return;
                } catch (Exception e) {
                  // server busy or gone: the health probe reports it
                }
              }
            },
            "flood-heap");
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

  double peak() {
    return peak;
  }
}
