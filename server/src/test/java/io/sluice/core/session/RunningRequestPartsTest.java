package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;

/**
 * Issue 34: a running request reads its session's parts (the runtime, the steps, the checks, the
 * estimate, the decision record, shadow mode, the serial context) from its session, and copies none
 * of their references: each copy was four bytes more per request, set on every stream.
 */
class RunningRequestPartsTest {
  private static final Set<Class<?>> SESSION_PARTS =
      Set.of(
          Sessions.class,
          SessionSteps.class,
          CheckRun.class,
          RequestCost.class,
          DecisionNotes.class,
          ShadowVerdicts.class,
          Executor.class);

  @Test
  void aRunningRequestCopiesNoneOfItsSessionsParts() {
    List<String> copies = new ArrayList<>();
    for (Field f : RunningRequest.class.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers())) {
        continue;
      }
      for (Class<?> part : SESSION_PARTS) {
        if (part.isAssignableFrom(f.getType())) {
          copies.add(f.getName() + ": " + part.getSimpleName());
        }
      }
    }
    assertThat(copies).as("RunningRequest's fields that copy a part of its session").isEmpty();
  }
}
