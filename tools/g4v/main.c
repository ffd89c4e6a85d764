/* main.c - `g4v`: dispatches to one subcommand per file (cmd_*.c). */
#include "cli.h"
#include "g4v.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand commands[] = {
    {"encode", cmd_encode, "encode images into Gemma 4 soft tokens (.npy / .safetensors)"},
    {"preprocess", cmd_preprocess,
     "decode + resize + patchify an image exactly as transformers does"},
    {"info", cmd_info, "describe a Gemma 4 checkpoint's vision tower"},
    {"serve", cmd_serve, "HTTP encode service: POST an image, get its soft tokens"},
    {"chat", cmd_chat, "ask a Gemma 4 model (llama.cpp's libllama) about images and videos"},
    {"models", cmd_models, "list the Gemma 4 models already on disk (HF cache, Ollama, LM Studio)"},
    {"pull", cmd_pull, "fetch a model from the Hugging Face Hub (by default its vision tower only)"},
};

static void usage(FILE *f) {
    fprintf(f, "g4v %s - Gemma 4 vision embeddings on the CPU\n\n", g4v_version());
    fprintf(f,
            "usage: g4v <command> [options]   (g4v <command> --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nexit codes: 0 ok, 1 usage error, 2 input error, 3 model error, 4 output error,\n"
               "            5 internal error\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return G4V_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return G4V_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("g4v %s\n", g4v_version());
        return G4V_EXIT_OK;
    }
    /* the files may come from anyone (g4v serve): no header may make FFmpeg allocate a GB */
    g4v_video_cap_allocations(G4V_VIDEO_ALLOC_CAP);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "g4v: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return G4V_EXIT_USAGE;
}
