package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.observability.StreamTally;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

class LiveStreamsTest {
  static final class Member extends LiveStreams.Node {
    private final int hash;

    Member(int hash) {
      this.hash = hash;
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }

  @Test
  void addRemoveAndSnapshotInAnyOrder() {
    LiveStreams<Member> live = new LiveStreams<>();
    List<Member> all = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      Member m = new Member(i % 7); // several per stripe: head, middle and tail removals
      all.add(m);
      live.add(m);
    }
    assertThat(live.size()).isEqualTo(200);
    assertThat(live.snapshot()).containsExactlyInAnyOrderElementsOf(all);
    for (int i = 0; i < 200; i += 3) {
      live.remove(all.get(i), StreamTally.Close.COMPLETED);
      live.remove(all.get(i), StreamTally.Close.FAILED); // a second remove is ignored
    }
    List<Member> left = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      if (i % 3 != 0) {
        left.add(all.get(i));
      }
    }
    assertThat(live.size()).isEqualTo(left.size());
    assertThat(live.snapshot()).containsExactlyInAnyOrderElementsOf(left);
    left.forEach(m -> live.remove(m, StreamTally.Close.CANCELLED));
    assertThat(live.size()).isZero();
    assertThat(live.snapshot()).isEmpty();
    assertThat(live.opened()).isEqualTo(200);
    assertThat(live.closed(StreamTally.Close.COMPLETED)).isEqualTo(67);
    assertThat(live.closed(StreamTally.Close.FAILED)).isZero();
    assertThat(live.closed(StreamTally.Close.CANCELLED)).isEqualTo(133);
  }

  @Test
  void twoThreadsAddingAndRemovingLeaveNothingBehind() throws Exception {
    LiveStreams<Member> live = new LiveStreams<>();
    CountDownLatch start = new CountDownLatch(1);
    Runnable churn =
        () -> {
          try {
            start.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          List<Member> mine = new ArrayList<>();
          for (int i = 0; i < 50_000; i++) {
            Member m = new Member(ThreadLocalRandom.current().nextInt());
            live.add(m);
            mine.add(m);
            if (mine.size() > 16) {
              live.remove(
                  mine.remove(ThreadLocalRandom.current().nextInt(mine.size())),
                  StreamTally.Close.COMPLETED);
            }
          }
          mine.forEach(m -> live.remove(m, StreamTally.Close.CANCELLED));
        };
    Thread a = new Thread(churn);
    Thread b = new Thread(churn);
    a.start();
    b.start();
    start.countDown();
    a.join();
    b.join();
    assertThat(live.size()).isZero();
    assertThat(live.snapshot()).isEmpty();
    assertThat(live.opened()).isEqualTo(100_000);
    assertThat(live.closed(StreamTally.Close.COMPLETED) + live.closed(StreamTally.Close.CANCELLED))
        .isEqualTo(100_000);
  }
}
