import com.sun.tools.attach.VirtualMachine;

/**
 * Loads async-profiler into a running JVM with one command (start, stop, dump ...), the way its
 * own launcher does: compiled ({@code javac -d DIR bench/scripts/AsyncAttach.java}), {@code java -cp
 * DIR AsyncAttach PID LIB "start,event=cpu"} (from the source launcher the attach fails). jcmd's
 * JVMTI.agent_load cannot pass async-profiler's options (it splits them at '='). Used by
 * bench/floor-profile.sh.
 */
public class AsyncAttach {
  public static void main(String[] args) throws Exception {
    VirtualMachine vm = VirtualMachine.attach(args[0]);
    try {
      vm.loadAgentPath(args[1], args[2]);
    } finally {
      vm.detach();
    }
  }
}
