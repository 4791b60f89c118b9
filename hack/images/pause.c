/*
 * The sandbox ("pause") process of every Pod on the local real node: it holds the Pod's
 * namespaces, reaps the zombies a shared PID namespace leaves it, and exits 0 on SIGINT or
 * SIGTERM so the runtime can stop the sandbox at once. hack/images/build links it statically
 * (gcc -static), so the image is this one file.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int signal_number) {
    (void)signal_number;
    _exit(0);
}

static void on_child(int signal_number) {
    (void)signal_number;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction action = {0};
    action.sa_handler = on_stop;
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    action.sa_handler = on_child;
    action.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &action, NULL);
    for (;;) {
        pause();
    }
    return 1;
}
