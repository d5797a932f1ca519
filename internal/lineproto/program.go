package lineproto

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// StderrLine is the longest line of a program's standard error forwarded whole; longer ones
// are cut.
const StderrLine = 64 << 10

// drainTimeout bounds the wait for a killed program's output to end.
const drainTimeout = time.Second

// Command says how to start a program.
type Command struct {
	// Line is run by the shell (sh -c; cmd /C on Windows).
	Line string
	// Dir is the working directory; "" is vkgrad's.
	Dir string
	// Stderr receives the program's standard error, each line after Prefix; nil drops it.
	Stderr io.Writer
	Prefix string
}

// Program is a started program: requests go through Conn, its standard error is forwarded. It
// runs in a process group of its own, so that stopping it also ends what its shell started,
// and on Linux the kernel kills it when vkgrad dies.
type Program struct {
	// Conn speaks to the program.
	Conn *Conn

	cmd        *exec.Cmd
	stdin      io.WriteCloser
	stdout     *os.File
	stderr     *os.File
	stderrDone chan struct{} // closed once its standard error is forwarded to the end
	exited     chan struct{} // closed once the program has exited and its group is killed
	waitErr    error         // how it exited; set before exited is closed
}

// Start runs c.Line with pipes to its standard streams. Its output goes to pipes vkgrad owns
// rather than exec's, which Wait would close before the last lines are read.
func Start(c Command) (*Program, error) {
	shell, flag := "sh", "-c"
	if runtime.GOOS == "windows" {
		shell, flag = "cmd", "/C"
	}
	cmd := exec.Command(shell, flag, c.Line)
	cmd.Dir = c.Dir
	ownGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = startCmd(cmd)
	outW.Close() // the program holds its own copies
	errW.Close()
	if err != nil {
		stdin.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &Program{cmd: cmd, stdin: stdin, stdout: outR, stderr: errR, Conn: NewConn(stdin, outR), stderrDone: make(chan struct{}), exited: make(chan struct{})}
	go p.wait()
	sink := c.Stderr
	if sink == nil {
		sink = io.Discard
	}
	go func() {
		Forward(errR, sink, c.Prefix, StderrLine)
		close(p.stderrDone)
	}()
	return p, nil
}

// wait waits for the program to exit, then kills what it left in its group: a child started
// in the background holds the program's output open, and a request would wait for its reply
// until the timeout instead of failing at once.
func (p *Program) wait() {
	p.waitErr = p.cmd.Wait()
	killGroup(p.cmd)
	close(p.exited)
}

// Pid is the program's process id: the shell's, which is the program itself when the command
// line is one command the shell execs.
func (p *Program) Pid() int { return p.cmd.Process.Pid }

// Kill kills the program's process group at once; a call waiting on Conn returns ErrEnded. It
// is safe while another goroutine uses the program, and Stop must still be called.
func (p *Program) Kill() { killGroup(p.cmd) }

// Stop ends the program: its input is closed, it gets grace to finish, then its whole group is
// killed, whether or not the program itself has ended. It returns how the program ended and
// the lines it wrote that no request asked for. Call it once.
func (p *Program) Stop(grace time.Duration) (status string, leftover []string) {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
		killGroup(p.cmd)
		<-p.exited
	}
	err := p.waitErr
	leftover = p.Conn.Leftover(drainTimeout)
	p.Conn.Discard()
	select { // the last lines of its standard error reach the log
	case <-p.stderrDone:
	case <-time.After(drainTimeout):
	}
	p.stdout.Close()
	p.stderr.Close()
	if err != nil {
		return err.Error(), leftover
	}
	return "exit status 0", leftover
}
