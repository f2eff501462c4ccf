package io.sluice.core.share;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * A {@link ShareStore} whose exchanges the test moves one step at a time, as a network and a store
 * move them: an exchange is first <i>sent</i> (queued here, unanswered), then <i>run</i> on the
 * store it wraps (its lease written, its grant computed: the instant Redis runs the script), then
 * <i>answered</i> (the replica's callback runs, on the test's thread). Between those steps the
 * replicas keep admitting, as they do while a real exchange is on the wire. Leave and supersede go
 * through at once. Not thread-safe: one test thread drives it.
 */
public final class SteppedShareStore implements ShareStore {
  /** One exchange on its way: sent, maybe run, not answered yet. */
  public static final class Trip {
    final Exchange exchange;
    final CompletableFuture<Grant> answer = new CompletableFuture<>();
    Grant grant; // set once run

    Trip(Exchange exchange) {
      this.exchange = exchange;
    }

    public String replica() {
      return exchange.replica();
    }

    public boolean ran() {
      return grant != null;
    }
  }

  private final ShareStore store;
  private final List<Trip> trips = new ArrayList<>();

  public SteppedShareStore(ShareStore store) {
    this.store = store;
  }

  @Override
  public CompletionStage<Grant> exchange(Exchange x) {
    Trip t = new Trip(x);
    trips.add(t);
    return t.answer;
  }

  /** Exchanges sent and not answered yet, in the order they were sent. */
  public List<Trip> trips() {
    return List.copyOf(trips);
  }

  /**
   * Runs {@code t} on the store (its lease is written now); its answer waits for {@link #answer}.
   */
  public void run(Trip t) {
    if (t.grant == null) {
      t.grant = await(store.exchange(t.exchange));
    }
  }

  /** Answers {@code t} (running it first if it has not run): the replica applies its grant now. */
  public void answer(Trip t) {
    run(t);
    trips.remove(t);
    t.answer.complete(t.grant);
  }

  /** Drops {@code t} unanswered (its replica crashed): a run exchange stays written. */
  public void drop(Trip t) {
    trips.remove(t);
  }

  @Override
  public CompletionStage<Void> leave(String namespace, String pool, String replica) {
    return CompletableFuture.completedFuture(await(store.leave(namespace, pool, replica)));
  }

  @Override
  public CompletionStage<Integer> supersede(
      String namespace, String pool, String replica, String prefix) {
    return CompletableFuture.completedFuture(
        await(store.supersede(namespace, pool, replica, prefix)));
  }

  private static <T> T await(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("the wrapped share store did not answer", e);
    }
  }
}
