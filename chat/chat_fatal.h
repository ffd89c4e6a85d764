/* chat_fatal.h - a fatal signal (SIGILL, SIGSEGV, SIGBUS, SIGFPE) says where it struck and what to
 * do before the process dies of it (docs/CHAT.md §6).
 *
 * Without it a crash inside llama.cpp's CPU backend reads "Illegal instruction" and nothing else.
 * The handler finds the faulting instruction's address in the signal's context, names the loaded
 * library it lies in (llama.cpp's CPU module, libggml, libllama, or other code), writes one line
 * to stderr and dies of the same signal (the exit status and a core file stay what they were).
 * Only async-signal-safe calls in the handler: the libraries' address ranges are read when it
 * is installed. */
#ifndef G4V_CHAT_FATAL_H
#define G4V_CHAT_FATAL_H

/* Installs the handler once per process (thread-safe); later calls refresh the address ranges
 * (call it again after llama.cpp's backends are loaded). A handler the program set for one of
 * these signals before is kept, not replaced. */
void chat_fatal_install(void);

#endif
