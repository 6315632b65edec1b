/* Does putting PoCL's basic device into the pthread device's context (the caller-thread
 * companion, backend/README.md) slow the pthread device's own queues? Two contexts in one
 * process, one with the pthread device only and one with pthread + basic; on each a pthread
 * queue runs 10 row-softmax kernels, each followed by an empty native kernel (what native
 * steps are), launches held behind a user event as engines do, input and output over host
 * memory made per call; timed round robin.
 *
 *   cc -O2 bench/cl_shared_context.c -o /tmp/cl_shared_context -lOpenCL
 *   POCL_DEVICES="pthread basic" /tmp/cl_shared_context 2000 4 64     # rounds rows cols
 *   POCL_DEVICES="pthread basic" /tmp/cl_shared_context 100 512 1024
 *
 * PoCL 3.1, 2 cores, load 8 (session 8): 4x64 65.3 / 65.3 us median (p10 47.8 / 43.8);
 * 512x1024 112.0 / 120.0 ms (p10 56.2 / 57.0): no difference beyond the load's noise. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static const char *src =
"__kernel void sm(__global const float *a, __global float *b, int n) {\n"
" int r = get_global_id(0); float m=-1e30f; for(int i=0;i<n;i++) m=fmax(m,a[r*n+i]);\n"
" float s=0; for(int i=0;i<n;i++) s+=exp(a[r*n+i]-m); for(int i=0;i<n;i++) b[r*n+i]=exp(a[r*n+i]-m)/s; }\n";
#define CK(x) do{cl_int e_=(x); if(e_){printf("err %d line %d\n",e_,__LINE__);exit(1);}}while(0)
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
enum{NK=10};
static void nat(void *args){ (void)args; }
typedef struct {cl_context ctx; cl_command_queue q; cl_kernel k[NK]; cl_mem tmp[2]; float *hin,*hout; int R,C;} mode;
static void run(mode*m){
  cl_int e; cl_mem in=clCreateBuffer(m->ctx,CL_MEM_USE_HOST_PTR|CL_MEM_READ_ONLY,sizeof(float)*m->R*m->C,m->hin,&e);
  cl_mem out=clCreateBuffer(m->ctx,CL_MEM_USE_HOST_PTR,sizeof(float)*m->R*m->C,m->hout,&e);
  cl_event ue=clCreateUserEvent(m->ctx,&e);
  int n=m->C;
  for(int i=0;i<NK;i++){
    cl_mem a = i==0?in:m->tmp[(i+1)&1]; cl_mem b= i==NK-1?out:m->tmp[i&1];
    clSetKernelArg(m->k[i],0,sizeof a,&a);clSetKernelArg(m->k[i],1,sizeof b,&b);clSetKernelArg(m->k[i],2,sizeof n,&n);
    size_t g=m->R; CK(clEnqueueNDRangeKernel(m->q,m->k[i],1,NULL,&g,NULL,i==0?1:0,i==0?&ue:NULL,NULL));
    /* a native kernel between: what native steps are */
    cl_mem ml[1]={b}; const void *loc[1]; char argbuf[sizeof(void*)]; loc[0]=argbuf;
    CK(clEnqueueNativeKernel(m->q,nat,argbuf,sizeof argbuf,1,ml,loc,0,NULL,NULL));
  }
  clSetUserEventStatus(ue,CL_COMPLETE);clReleaseEvent(ue);
  CK(clFinish(m->q)); clReleaseMemObject(in);clReleaseMemObject(out);
}
int main(int argc,char**argv){
  int rounds=atoi(argv[1]); int R=atoi(argv[2]), C=atoi(argv[3]);
  cl_platform_id p; CK(clGetPlatformIDs(1,&p,NULL));
  cl_device_id devs[4]; cl_uint nd; CK(clGetDeviceIDs(p,CL_DEVICE_TYPE_ALL,4,devs,&nd));
  cl_device_id pth=0,bas=0; char nm[256];
  for(cl_uint i=0;i<nd;i++){clGetDeviceInfo(devs[i],CL_DEVICE_NAME,256,nm,NULL); if(!strncmp(nm,"pthread",7))pth=devs[i]; if(!strncmp(nm,"basic",5))bas=devs[i];}
  cl_device_id all[2]={pth,bas}; cl_int e;
  mode ms[2];
  for(int j=0;j<2;j++){mode*m=&ms[j]; m->R=R;m->C=C;
    m->ctx=clCreateContext(NULL,j?2:1,all,NULL,NULL,&e);CK(e);
    cl_program pr=clCreateProgramWithSource(m->ctx,1,&src,NULL,&e);CK(e); CK(clBuildProgram(pr,1,&pth,"",NULL,NULL));
    m->q=clCreateCommandQueueWithProperties(m->ctx,pth,NULL,&e);CK(e);
    for(int i=0;i<NK;i++){m->k[i]=clCreateKernel(pr,"sm",&e);CK(e);}
    for(int i=0;i<2;i++){m->tmp[i]=clCreateBuffer(m->ctx,0,sizeof(float)*R*C,NULL,&e);CK(e);}
    m->hin=aligned_alloc(64,sizeof(float)*R*C); m->hout=aligned_alloc(64,sizeof(float)*R*C);
    for(int i=0;i<R*C;i++)m->hin[i]=(i%7)*0.1f;}
  double *t=malloc(sizeof(double)*rounds*2);
  for(int w=0;w<5;w++)for(int j=0;j<2;j++)run(&ms[j]);
  for(int r=0;r<rounds;r++)for(int j=0;j<2;j++){double t0=now();run(&ms[j]);t[j*rounds+r]=now()-t0;}
  const char*nmz[2]={"pthread ctx(1 dev)","pthread ctx(+basic)"};
  for(int j=0;j<2;j++){qsort(t+j*rounds,rounds,sizeof(double),cmp);printf("%dx%d %-20s median %8.1f p10 %8.1f p90 %8.1f\n",R,C,nmz[j],t[j*rounds+rounds/2],t[j*rounds+rounds/10],t[j*rounds+rounds*9/10]);}
  return 0;}
