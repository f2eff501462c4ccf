# Per-call µs by the innermost Sluice/grpc/Netty/protobuf class (or method) of each sample, two
# collapsed-stack files side by side (bench/floor-profile.sh): USER_US is the event loops user CPU per
# call the floor printed (--threads) for that target; profiled µs run about 1.6x the unprofiled.
#   python3 bench/scripts/collapsed-by-class.py A.collapsed A_USER_US B.collapsed B_USER_US [c|m] [rows]
import sys, collections
def owner(frames, depth):
    for f in reversed(frames):
        if f.startswith('io/sluice/') or f.startswith('io/grpc/') or f.startswith('com/google/protobuf'):
            cls = f.split('.')[0].replace('io/grpc/netty/shaded/io/netty/','netty/')
            if depth=='m': return f.replace('io/grpc/netty/shaded/io/netty/','netty/')
            return cls
    s=';'.join(frames)
    if 'CompileBroker' in s: return 'JIT'
    return 'other:'+frames[-1][:60]
def load(fn, user, depth):
    c=collections.Counter(); tot=0
    for line in open(fn):
        st,_,n=line.rstrip().rpartition(' '); n=int(n); fr=st.split(';')
        c[owner(fr,depth)]+=n; tot+=n
    return {k: v*user/tot for k,v in c.items()}
a=load(sys.argv[1], float(sys.argv[2]), sys.argv[5] if len(sys.argv)>5 else 'c'); b=load(sys.argv[3], float(sys.argv[4]), sys.argv[5] if len(sys.argv)>5 else 'c')
keys=sorted(set(a)|set(b), key=lambda k: -(abs(a.get(k,0)-b.get(k,0))))
print(f"{'part':70s} {'A':>7s} {'B':>7s} {'A-B':>7s}")
for k in keys[:int(sys.argv[6]) if len(sys.argv)>6 else 50]: print(f"{k[:70]:70s} {a.get(k,0):7.2f} {b.get(k,0):7.2f} {a.get(k,0)-b.get(k,0):7.2f}")
print('sum', sum(a.values()), sum(b.values()))
